package keys

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/aigateway/gateway/internal/jsonobj"
	"github.com/aigateway/gateway/policy/keys/seal"
)

// The providers whose Files APIs the gateway speaks, and so whose keys a
// workspace may bring.
const (
	ProviderOpenAI    = "openai"
	ProviderAnthropic = "anthropic"
)

// IsProvider reports whether name is a provider a key may be stored for.
func IsProvider(name string) bool { return name == ProviderOpenAI || name == ProviderAnthropic }

// ErrProviderKeyNotFound: no such provider key for this user (another
// user's is reported the same way).
var ErrProviderKeyNotFound = errors.New("provider key not found")

// Limits of a provider key request.
const (
	maxProviderSecret = 4096
	maxAllowedItems   = 1000
	maxSortOrder      = 1_000_000
)

// ProviderKey is a workspace's own key for a provider (BYOK), with the
// fields the routing components read. The secret is only ever held sealed.
type ProviderKey struct {
	ID          string
	UserID      string
	WorkspaceID string
	Provider    string
	Name        *string
	// Label masks the secret: its first characters and its last four.
	Label  string
	Sealed []byte
	// FromCLI marks the key `gateway byok set` stores and replaces.
	FromCLI  bool
	Disabled bool
	// AllowedAPIKeys are the ids of the keys that may use it; nil: all of
	// the workspace's.
	AllowedAPIKeys []string
	AllowedModels  []string
	IsBYOKOnly     bool
	IsFallback     bool
	IsRequired     bool
	DeclaredZDR    *bool
	SortOrder      int
	CreatedAt      time.Time
	UpdatedAt      *time.Time
}

// Allows reports whether the API key id may use p.
func (p *ProviderKey) Allows(keyID string) bool {
	if p.AllowedAPIKeys == nil {
		return true
	}
	for _, id := range p.AllowedAPIKeys {
		if id == keyID {
			return true
		}
	}
	return false
}

// MaskSecret is the label of a provider secret: enough for a person to tell
// keys apart, never enough to use one.
func MaskSecret(secret string) string {
	if len(secret) < 12 {
		return "..."
	}
	return secret[:3] + "..." + secret[len(secret)-4:]
}

// ProviderKeyFields are the fields a creation or update may set; in an
// update only the Set ones change.
type ProviderKeyFields struct {
	Provider       Optional[string]
	Secret         Optional[seal.Secret]
	Workspace      Optional[string]
	Name           Optional[*string]
	Disabled       Optional[bool]
	AllowedAPIKeys Optional[[]string]
	AllowedModels  Optional[[]string]
	IsBYOKOnly     Optional[bool]
	IsFallback     Optional[bool]
	IsRequired     Optional[bool]
	DeclaredZDR    Optional[*bool]
	SortOrder      Optional[int]
}

// ParseProviderKeyRequest decodes a POST or PATCH /byok body strictly. A
// creation requires provider and key; an update may not change provider or
// workspace_id (the secret is sealed to both: create a new key instead).
func ParseProviderKeyRequest(body []byte, create bool) (ProviderKeyFields, error) {
	var (
		f   ProviderKeyFields
		bad = &InvalidError{}
	)
	err := jsonobj.Walk(body, func(key string, raw json.RawMessage) {
		switch key {
		case "provider":
			p := decodeString(key, raw, bad)
			if !IsProvider(p) {
				bad.add(key, "must be openai or anthropic")
			}
			f.Provider = Optional[string]{true, p}
		case "key":
			s := decodeString(key, raw, bad)
			switch {
			case strings.TrimSpace(s) == "":
				bad.add(key, "must not be empty")
			case len(s) > maxProviderSecret:
				bad.add(key, "must be at most 4096 bytes")
			case strings.ContainsFunc(s, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }):
				bad.add(key, "must not contain spaces or control characters")
			}
			f.Secret = Optional[seal.Secret]{true, seal.NewSecret(s)}
		case "workspace_id":
			if !jsonobj.IsNull(raw) {
				f.Workspace = Optional[string]{true, decodeString(key, raw, bad)}
			}
		case "name":
			var name *string
			if !jsonobj.IsNull(raw) {
				s := decodeString(key, raw, bad)
				if utf8.RuneCountInString(s) > MaxNameChars || strings.ContainsFunc(s, unicode.IsControl) {
					bad.add(key, "must be at most 100 characters, without control characters")
				}
				name = &s
			}
			f.Name = Optional[*string]{true, name}
		case "disabled":
			f.Disabled = Optional[bool]{true, decodeBool(key, raw, bad)}
		case "is_byok_only":
			f.IsBYOKOnly = Optional[bool]{true, decodeBool(key, raw, bad)}
		case "is_fallback":
			f.IsFallback = Optional[bool]{true, decodeBool(key, raw, bad)}
		case "is_required":
			f.IsRequired = Optional[bool]{true, decodeBool(key, raw, bad)}
		case "declared_zdr":
			var zdr *bool
			if !jsonobj.IsNull(raw) {
				b := decodeBool(key, raw, bad)
				zdr = &b
			}
			f.DeclaredZDR = Optional[*bool]{true, zdr}
		case "allowed_api_key_hashes":
			ids := decodeStrings(key, raw, bad)
			for _, id := range ids {
				if _, ok := ParseID(id); !ok {
					bad.add(key, "must list key hashes (16 hexadecimal characters each)")
					break
				}
			}
			f.AllowedAPIKeys = Optional[[]string]{true, ids}
		case "allowed_models":
			f.AllowedModels = Optional[[]string]{true, decodeStrings(key, raw, bad)}
		case "allowed_user_ids":
			if !jsonobj.IsNull(raw) {
				bad.add(key, "must be null: keys are not shared between users here")
			}
		case "sort_order":
			var n json.Number
			v, err := int64(0), error(nil)
			if err = json.Unmarshal(raw, &n); err == nil {
				v, err = n.Int64()
			}
			if err != nil || v < -maxSortOrder || v > maxSortOrder {
				bad.add(key, "must be an integer from -1000000 to 1000000")
			}
			f.SortOrder = Optional[int]{true, int(v)}
		default:
			bad.add(key, "unknown field")
		}
	})
	if documentProblem(err, bad) {
		return f, bad
	}
	if create {
		if !f.Provider.Set {
			bad.add("provider", "required")
		}
		if !f.Secret.Set {
			bad.add("key", "required")
		}
	} else {
		if f.Provider.Set {
			bad.add("provider", "cannot change: create a new provider key")
		}
		if f.Workspace.Set {
			bad.add("workspace_id", "cannot change: create a new provider key")
		}
	}
	return f, bad.orNil()
}

// decodeStrings reads an array of strings or null (nil).
func decodeStrings(field string, raw json.RawMessage, bad *InvalidError) []string {
	if jsonobj.IsNull(raw) {
		return nil
	}
	var out []string
	if err := json.Unmarshal(raw, &out); err != nil {
		bad.add(field, "must be an array of strings or null")
		return nil
	}
	if len(out) > maxAllowedItems {
		bad.add(field, "must have at most 1000 items")
	}
	for _, s := range out {
		if s == "" || len(s) > 256 {
			bad.add(field, "items must be 1 to 256 characters")
			break
		}
	}
	return out
}

// ProviderKeyQuery selects a page of a user's provider keys.
type ProviderKeyQuery struct {
	WorkspaceID string // "" for every workspace
	Offset      int
	Limit       int
}

// ProviderKeyStore persists provider keys; every method is scoped to one
// user (another user's key is ErrProviderKeyNotFound).
type ProviderKeyStore interface {
	CreateProviderKey(ctx context.Context, k ProviderKey) error
	UserProviderKey(ctx context.Context, userID, id string) (ProviderKey, error)
	ListProviderKeys(ctx context.Context, userID string, q ProviderKeyQuery) (page []ProviderKey, total int, err error)
	// UpdateProviderKey writes the Set fields of f but the secret, which
	// comes sealed in secret (nil: unchanged), and updated_at.
	UpdateProviderKey(ctx context.Context, userID, id string, f ProviderKeyFields, secret *SealedSecret, at time.Time) (ProviderKey, error)
	DeleteProviderKey(ctx context.Context, userID, id string) error
}

// SealedSecret is a replacement secret as the store keeps it.
type SealedSecret struct {
	Sealed []byte
	Label  string
}

// ProviderKeys manages a user's provider keys: the rules of /byok.
type ProviderKeys struct {
	store      ProviderKeyStore
	workspaces Workspaces
	sealer     *seal.Sealer
	now        func() time.Time
	newID      func() string
}

// NewProviderKeys returns the manager; newID makes the id of a new key.
func NewProviderKeys(store ProviderKeyStore, workspaces Workspaces, sealer *seal.Sealer, newID func() string) *ProviderKeys {
	return &ProviderKeys{store: store, workspaces: workspaces, sealer: sealer, now: time.Now, newID: newID}
}

// Create seals and stores a new provider key for userID.
func (m *ProviderKeys) Create(ctx context.Context, userID string, body []byte) (ProviderKey, error) {
	f, err := ParseProviderKeyRequest(body, true)
	if err != nil {
		return ProviderKey{}, err
	}
	ws, err := m.workspaces.WorkspaceID(ctx, userID, f.Workspace.Value)
	if errors.Is(err, ErrWorkspaceNotFound) {
		return ProviderKey{}, &InvalidError{Problems: []FieldProblem{{"workspace_id", "no such workspace"}}}
	}
	if err != nil {
		return ProviderKey{}, err
	}
	sealed, err := m.sealer.Seal(ws, f.Provider.Value, f.Secret.Value)
	if err != nil {
		return ProviderKey{}, fmt.Errorf("keys: seal provider key: %w", err)
	}
	k := ProviderKey{
		ID: m.newID(), UserID: userID, WorkspaceID: ws, Provider: f.Provider.Value, Name: f.Name.Value,
		Label: MaskSecret(f.Secret.Value.Reveal()), Sealed: sealed, Disabled: f.Disabled.Value,
		AllowedAPIKeys: f.AllowedAPIKeys.Value, AllowedModels: f.AllowedModels.Value,
		IsBYOKOnly: f.IsBYOKOnly.Value, IsFallback: f.IsFallback.Value, IsRequired: f.IsRequired.Value,
		DeclaredZDR: f.DeclaredZDR.Value, SortOrder: f.SortOrder.Value,
		CreatedAt: m.now().UTC().Truncate(time.Microsecond),
	}
	if err := m.store.CreateProviderKey(ctx, k); err != nil {
		return ProviderKey{}, err
	}
	return k, nil
}

// Get returns userID's provider key id.
func (m *ProviderKeys) Get(ctx context.Context, userID, id string) (ProviderKey, error) {
	return m.store.UserProviderKey(ctx, userID, id)
}

// List returns a page of userID's provider keys and how many the query
// selects in all.
func (m *ProviderKeys) List(ctx context.Context, userID string, q ProviderKeyQuery) ([]ProviderKey, int, error) {
	if q.WorkspaceID != "" {
		ws, err := m.workspaces.WorkspaceID(ctx, userID, q.WorkspaceID)
		if errors.Is(err, ErrWorkspaceNotFound) {
			return []ProviderKey{}, 0, nil
		}
		if err != nil {
			return nil, 0, err
		}
		q.WorkspaceID = ws
	}
	return m.store.ListProviderKeys(ctx, userID, q)
}

// Update applies a partial-update body; a new key is sealed to the stored
// key's workspace and provider.
func (m *ProviderKeys) Update(ctx context.Context, userID, id string, body []byte) (ProviderKey, error) {
	f, err := ParseProviderKeyRequest(body, false)
	if err != nil {
		return ProviderKey{}, err
	}
	cur, err := m.store.UserProviderKey(ctx, userID, id)
	if err != nil {
		return ProviderKey{}, err
	}
	var secret *SealedSecret
	if f.Secret.Set {
		sealed, err := m.sealer.Seal(cur.WorkspaceID, cur.Provider, f.Secret.Value)
		if err != nil {
			return ProviderKey{}, fmt.Errorf("keys: seal provider key: %w", err)
		}
		secret = &SealedSecret{Sealed: sealed, Label: MaskSecret(f.Secret.Value.Reveal())}
	}
	return m.store.UpdateProviderKey(ctx, userID, id, f, secret, m.now().UTC().Truncate(time.Microsecond))
}

// Delete removes userID's provider key id.
func (m *ProviderKeys) Delete(ctx context.Context, userID, id string) error {
	return m.store.DeleteProviderKey(ctx, userID, id)
}
