package keys

import (
	"context"
	"iter"
	"strings"
	"time"

	"github.com/aigateway/gateway/internal/invalid"
	"github.com/aigateway/gateway/policy/keys/seal"
	"github.com/google/uuid"
)

// Operator is what the person who runs the gateway does with keys, beyond
// what a user may do over HTTP: make a key of any role for any user (the
// first key of a user can come from nowhere else), list a user's keys of
// every role, disable, enable or delete any key by its id, and give a
// workspace its own key for a provider. The command
// line and the console's first-run link go through it, never through the
// store, so a key made there obeys the same rules as one made over HTTP,
// and every change reaches the change log that the replicas' revokers read.
type Operator struct {
	store      OperatorStore
	workspaces Workspaces
	sealer     func() (*seal.Sealer, error)
	now        func() time.Time
}

// OperatorStore is what the Operator needs of the store. Unlike
// ManagedStore, its changes are not scoped to one user.
type OperatorStore interface {
	KeyStore
	// ListKeys returns a page of userID's keys, oldest first.
	ListKeys(ctx context.Context, userID string, q ListQuery) ([]APIKey, error)
	// SetKeyDisabled disables or enables the key id of any role and
	// records the change in the change log; ErrKeyNotFound for an unknown
	// id.
	SetKeyDisabled(ctx context.Context, id string, disabled bool, at time.Time) error
	// RemoveKey deletes the key id of any role and records the change in
	// the change log; ErrKeyNotFound for an unknown id.
	RemoveKey(ctx context.Context, id string, at time.Time) error
	// PutProviderKey stores the operator's key of provider for the
	// workspace workspaceID (a canonical UUID), sealed, replacing the one
	// the operator stored before; workspace.ErrNotFound for an unknown
	// workspace.
	PutProviderKey(ctx context.Context, workspaceID, provider string, sealed []byte, label string) error
}

// NewOperator returns an Operator; workspaces resolves the workspace of a
// standard key and makes each user's default workspace, and sealer gives the sealer of provider keys, asked only
// when one is stored (on the embedded default, finding the sealing key may
// create it).
func NewOperator(store OperatorStore, workspaces Workspaces, sealer func() (*seal.Sealer, error)) *Operator {
	return &Operator{store: store, workspaces: workspaces, sealer: sealer, now: time.Now}
}

// NewKeyRequest describes a key the operator makes.
type NewKeyRequest struct {
	// Name is shown in lists: the rule of a name given over HTTP (1 to
	// MaxNameChars characters, no control characters).
	Name string
	// User is the id of the user the key belongs to (see ValidUserID); the
	// user is recorded if new.
	User string
	Role Role
	// Workspace is the id or slug of a standard key's workspace; "" is the
	// user's default workspace (made on first need). Other roles have none.
	Workspace string
	// Models restricts which models the key may look up, as canonical
	// catalog ids; nil allows all.
	Models []string
}

// MaxUserIDLen bounds a user id.
const MaxUserIDLen = 128

// ValidUserID reports whether s can name a user: 1 to MaxUserIDLen
// characters of ASCII letters, digits and "-_.@". User ids appear in logs,
// key listings and the console, so they are kept to characters that read
// the same everywhere and need no escaping.
func ValidUserID(s string) bool {
	if s == "" || len(s) > MaxUserIDLen {
		return false
	}
	for _, c := range s {
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || strings.ContainsRune("-_.@", c)) {
			return false
		}
	}
	return true
}

// Check returns the problems of r as *invalid.Problems (fields "name",
// "user", "role", "workspace"), or nil.
func (r NewKeyRequest) Check() error {
	var p invalid.Problems
	checkName(r.Name, &p) // the rule of a name given over HTTP
	if !ValidUserID(r.User) {
		p.Add("user", "must be 1 to 128 characters of letters, digits, '-', '_', '.', '@'")
	}
	if !r.Role.Valid() {
		p.Add("role", "must be management, standard or service")
	} else if r.Role != RoleStandard && r.Workspace != "" {
		p.Add("workspace", "applies to standard keys only")
	}
	return p.Err()
}

// Create makes a key and returns its secret, which is shown this once: only
// its hash is stored. A problem of req is *invalid.Problems; an unknown
// workspace is ErrWorkspaceNotFound.
func (o *Operator) Create(ctx context.Context, req NewKeyRequest) (token string, key APIKey, err error) {
	if err := req.Check(); err != nil {
		return "", key, err
	}
	if err := o.store.EnsureUser(ctx, req.User); err != nil {
		return "", key, err
	}
	token, k, err := NewKey()
	if err != nil {
		return "", key, err
	}
	k.UserID, k.CreatorUserID, k.Name, k.Models, k.Role = req.User, req.User, req.Name, req.Models, req.Role
	k.CreatedAt = o.now().UTC()
	// Every key acts in its user's default workspace unless it names
	// another, so the default exists from the user's first key on, whatever
	// its role: a user's list of workspaces never depends on whether the
	// default was read first. It is made before the key (idempotently: the
	// store's unique slug settles a race), so no key is ever stored without
	// it; a key refused after that leaves a workspace its user would have
	// had anyway.
	def, err := o.workspaces.WorkspaceID(ctx, req.User, "")
	if err != nil {
		return "", key, err
	}
	if req.Role == RoleStandard {
		k.WorkspaceID = def
		if req.Workspace != "" {
			if k.WorkspaceID, err = o.workspaces.WorkspaceID(ctx, req.User, req.Workspace); err != nil {
				return "", key, err
			}
		}
	}
	if err := o.store.CreateKey(ctx, k); err != nil {
		return "", key, err
	}
	return token, k, nil
}

// Keys yields every key of userID, of every role, disabled and expired
// ones too, oldest first, reading the store a page at a time. An invalid
// user id yields *invalid.Problems.
func (o *Operator) Keys(ctx context.Context, userID string) iter.Seq2[APIKey, error] {
	return func(yield func(APIKey, error) bool) {
		if !ValidUserID(userID) {
			yield(APIKey{}, invalid.One("user", "must be 1 to 128 characters of letters, digits, '-', '_', '.', '@'"))
			return
		}
		for offset := 0; ; offset += PageSize {
			page, err := o.store.ListKeys(ctx, userID, ListQuery{Offset: offset, Limit: PageSize, IncludeDisabled: true})
			if err != nil {
				yield(APIKey{}, err)
				return
			}
			for _, k := range page {
				if !yield(k, nil) {
					return
				}
			}
			if len(page) < PageSize {
				return
			}
		}
	}
}

// SetDisabled disables or enables the key id, of any role. The change is
// logged for the replicas' revokers, so every replica refuses a disabled
// key within seconds. ErrKeyNotFound for an unknown or malformed id.
func (o *Operator) SetDisabled(ctx context.Context, id string, disabled bool) error {
	if _, ok := ParseID(id); !ok {
		return ErrKeyNotFound
	}
	return o.store.SetKeyDisabled(ctx, id, disabled, o.now())
}

// Delete removes the key id, of any role, as SetDisabled disables it.
func (o *Operator) Delete(ctx context.Context, id string) error {
	if _, ok := ParseID(id); !ok {
		return ErrKeyNotFound
	}
	return o.store.RemoveKey(ctx, id, o.now())
}

// SetProviderKey stores secret as workspaceID's own key for provider,
// sealed, replacing the one the operator stored before; only its masked
// label is kept in the clear. Problems of the arguments are
// *invalid.Problems (fields "workspace", "provider", "key"); an unknown
// workspace is the store's workspace.ErrNotFound.
func (o *Operator) SetProviderKey(ctx context.Context, workspaceID, provider string, secret seal.Secret) error {
	var p invalid.Problems
	id, err := uuid.Parse(workspaceID)
	if err != nil {
		p.Add("workspace", "must be a workspace id (a UUID)")
	}
	if !IsProvider(provider) {
		p.Add("provider", "must be openai or anthropic")
	}
	checkProviderSecret(secret, &p) // the rule of a key given over /byok
	if err := p.Err(); err != nil {
		return err
	}
	sealer, err := o.sealer()
	if err != nil {
		return err
	}
	sealed, err := sealer.Seal(id.String(), provider, secret)
	if err != nil {
		return err
	}
	return o.store.PutProviderKey(ctx, id.String(), provider, sealed, MaskSecret(secret.Reveal()))
}
