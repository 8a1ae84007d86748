package keys

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/aigateway/gateway/internal/invalid"
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

// ProviderKeyFields are the fields a creation or update may set, typed:
// the edge decodes them from the body of POST or PATCH /byok. In an update
// only the Set ones change. A Set Name or DeclaredZDR of nil, or a Set list
// of nil, is an explicit null.
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

// SortOrderRule is what a provider key's sort_order must be.
const SortOrderRule = "must be an integer from -1000000 to 1000000"

// CheckCreate adds to p what is wrong with f as a new provider key: each
// given field's own rules (CheckFields), and provider and key are required.
// ProviderKeys.Create checks its request with it; the edge calls it too
// when decoding the body already found problems of its own, so that the
// client hears of every problem at once. A field that already has a
// problem in p keeps it.
func (f ProviderKeyFields) CheckCreate(p *invalid.Problems) {
	f.CheckFields(p)
	if !f.Provider.Set {
		p.Add("provider", "required")
	}
	if !f.Secret.Set {
		p.Add("key", "required")
	}
}

// CheckUpdate adds to p what is wrong with f as a change of a provider
// key: each given field's own rules, and neither provider nor workspace_id
// may change (the secret is sealed to both: a new provider key is made
// instead).
func (f ProviderKeyFields) CheckUpdate(p *invalid.Problems) {
	f.CheckFields(p)
	if f.Provider.Set {
		p.Add("provider", "cannot change: create a new provider key")
	}
	if f.Workspace.Set {
		p.Add("workspace_id", "cannot change: create a new provider key")
	}
}

// CheckFields adds to p what is wrong with each field f sets, requiring
// none: a provider the gateway speaks to, a secret that can be sent in a
// header, a name of at most MaxNameChars characters under the rule of
// names shown to people (as a key's name), lists of at most
// 1,000 items of 1 to 256 characters (key hashes where they name keys), a
// sort order within SortOrderRule. It judges the fields of a document that
// could not be read to its end.
func (f ProviderKeyFields) CheckFields(p *invalid.Problems) {
	if f.Provider.Set && !IsProvider(f.Provider.Value) {
		p.Add("provider", "must be openai or anthropic")
	}
	if f.Secret.Set {
		checkProviderSecret(f.Secret.Value, p)
	}
	if name := f.Name.Value; name != nil {
		if utf8.RuneCountInString(*name) > MaxNameChars {
			p.Add("name", "must be at most 100 characters")
		}
		checkDisplayName(*name, p)
	}
	checkItems("allowed_api_key_hashes", f.AllowedAPIKeys.Value, p)
	for _, id := range f.AllowedAPIKeys.Value {
		if _, ok := ParseID(id); !ok {
			p.Add("allowed_api_key_hashes", "must list key hashes (16 hexadecimal characters each)")
			break
		}
	}
	checkItems("allowed_models", f.AllowedModels.Value, p)
	if v := f.SortOrder.Value; v < -maxSortOrder || v > maxSortOrder {
		p.Add("sort_order", SortOrderRule)
	}
}

// checkProviderSecret applies the rule of a provider's key, whoever stores
// it (/byok or the operator's byok set): it goes into an HTTP header of
// every call to the provider, so it is one bounded token.
func checkProviderSecret(secret seal.Secret, p *invalid.Problems) {
	s := secret.Reveal()
	switch {
	case strings.TrimSpace(s) == "":
		p.Add("key", "must not be empty")
	case len(s) > maxProviderSecret:
		p.Add("key", "must be at most 4096 bytes")
	case !utf8.ValidString(s) || strings.ContainsFunc(s, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }):
		p.Add("key", "must not contain spaces or control characters")
	}
}

// checkItems applies the limits of a list of strings.
func checkItems(field string, items []string, p *invalid.Problems) {
	if len(items) > maxAllowedItems {
		p.Add(field, "must have at most 1000 items")
	}
	for _, s := range items {
		if s == "" || len(s) > 256 {
			p.Add(field, "items must be 1 to 256 characters")
			break
		}
	}
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

// Create seals and stores a new provider key for userID, made of f
// checked as ProviderKeyFields.CheckCreate does (every problem at once in
// *invalid.Problems, nothing stored); a workspace the user does not have is
// a problem of workspace_id.
func (m *ProviderKeys) Create(ctx context.Context, userID string, f ProviderKeyFields) (ProviderKey, error) {
	var p invalid.Problems
	f.CheckCreate(&p)
	if err := p.Err(); err != nil {
		return ProviderKey{}, err
	}
	ws, err := m.workspaces.WorkspaceID(ctx, userID, f.Workspace.Value)
	if errors.Is(err, ErrWorkspaceNotFound) {
		return ProviderKey{}, invalid.One("workspace_id", "no such workspace")
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

// Update applies the Set fields of f, checked as
// ProviderKeyFields.CheckUpdate does (every problem at once in
// *invalid.Problems, nothing changed); a new secret is sealed to the stored
// key's workspace and provider.
func (m *ProviderKeys) Update(ctx context.Context, userID, id string, f ProviderKeyFields) (ProviderKey, error) {
	var p invalid.Problems
	f.CheckUpdate(&p)
	if err := p.Err(); err != nil {
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
