package keys

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/aigateway/gateway/internal/invalid"
	"github.com/aigateway/gateway/policy/keys/seal"
)

// Errors of key management.
var (
	// ErrManagedByCLI: management and service keys are listed but changed
	// only with the operator's CLI. It is an ErrForbidden.
	ErrManagedByCLI = fmt.Errorf("%w: manage this key with the CLI", ErrForbidden)
	// ErrIdempotencyMismatch: an Idempotency-Key was reused with another body.
	ErrIdempotencyMismatch = errors.New("idempotency key reused with a different request")
	// ErrWorkspaceNotFound: the request named no workspace of the user. The
	// Manager reports it as a problem of the workspace_id field.
	ErrWorkspaceNotFound = errors.New("no such workspace")
)

// PageSize is the size of a page of List.
const PageSize = 100

// IdempotencyTTL is how long a creation's Idempotency-Key is remembered,
// and so how long its sealed secret is kept.
const IdempotencyTTL = 24 * time.Hour

// ScopeCreate is the scope of creation records in the idempotency table.
const ScopeCreate = "key.create"

// Idempotency is the record of one idempotent creation: the request (by
// hash), the key it made and that key's secret, sealed, so a retry gets the
// same answer and secret.
type Idempotency struct {
	UserID      string
	Key         string
	RequestHash string
	KeyID       string
	Sealed      []byte
	CreatedAt   time.Time
}

// ListQuery selects a page of a user's keys.
type ListQuery struct {
	Offset          int
	IncludeDisabled bool
	WorkspaceID     string // "" for every workspace
	Limit           int
}

// ManagedStore is what the Manager needs of the store beyond
// authentication. Every method is scoped to one user: another user's key is
// ErrKeyNotFound, exactly as an unknown one.
type ManagedStore interface {
	KeyStore
	// CreateKeyOnce stores k, or, when idem is not nil and an unexpired
	// record of (idem.UserID, idem.Key) exists, stores nothing and returns
	// that record as prior. The key and the record are one transaction.
	CreateKeyOnce(ctx context.Context, k APIKey, idem *Idempotency) (prior *Idempotency, err error)
	// UserKey returns userID's key id.
	UserKey(ctx context.Context, userID, id string) (APIKey, error)
	// ListKeys returns a page of userID's keys, oldest first (created_at,
	// then id).
	ListKeys(ctx context.Context, userID string, q ListQuery) ([]APIKey, error)
	// UpdateKey applies the Set fields of u to userID's standard key id,
	// sets updated_at to at and records the change in the change log, in one
	// transaction. A key of another role is ErrManagedByCLI, unchanged.
	UpdateKey(ctx context.Context, userID, id string, u UpdateRequest, at time.Time) (APIKey, error)
	// DeleteKey removes userID's standard key id and records the change in
	// the change log, in one transaction; ErrManagedByCLI for another role.
	DeleteKey(ctx context.Context, userID, id string, at time.Time) error
}

// Workspaces resolves the workspace a request names for a user.
type Workspaces interface {
	// WorkspaceID returns the id of userID's workspace ref (an id or a
	// slug), or of the user's default workspace when ref is "", or
	// ErrWorkspaceNotFound.
	WorkspaceID(ctx context.Context, userID, ref string) (string, error)
}

// Manager creates, lists, changes and deletes the keys of a user: the rules
// of the /keys routes, free of HTTP.
type Manager struct {
	store      ManagedStore
	workspaces Workspaces
	sealer     *seal.Sealer
	now        func() time.Time
	// limitsChanged is told after a key's limit was set or changed.
	limitsChanged func(context.Context)
}

// OnLimitsChanged makes m tell f, once the change is stored, that a key's
// spending limit was set or changed, so that this replica's spend view can
// take it in at once rather than at its next refresh: a limit lowered
// below what a key has spent then refuses it here on the next request.
func (m *Manager) OnLimitsChanged(f func(context.Context)) { m.limitsChanged = f }

func (m *Manager) tellLimits(ctx context.Context) {
	if m.limitsChanged != nil {
		m.limitsChanged(ctx)
	}
}

// NewManager returns a Manager. sealer keeps a created key's secret for the
// idempotency window; without one (nil), Idempotency-Key is refused.
func NewManager(store ManagedStore, workspaces Workspaces, sealer *seal.Sealer) *Manager {
	return &Manager{store: store, workspaces: workspaces, sealer: sealer, now: time.Now}
}

// ErrIdempotencyUnavailable: Idempotency-Key was sent but no sealing key is
// configured to keep the secret for the replay.
var ErrIdempotencyUnavailable = errors.New("idempotent key creation needs a sealing key")

// Created is the answer to a creation: the key and its secret, shown once
// (again on a replay of the same Idempotency-Key).
type Created struct {
	Key      APIKey
	Secret   seal.Secret
	Replayed bool
}

// Create makes a standard key for userID from req, checked as
// CreateRequest.Check does (every problem at once in *invalid.Problems,
// nothing made); a workspace the user does not have is a problem of
// workspace_id.
func (m *Manager) Create(ctx context.Context, userID string, req CreateRequest, idempotencyKey string) (Created, error) {
	now := m.now().UTC().Truncate(time.Microsecond)
	var p invalid.Problems
	req.Check(now, &p)
	if err := p.Err(); err != nil {
		return Created{}, err
	}
	if req.ExpiresAt != nil {
		t := expiry(*req.ExpiresAt)
		req.ExpiresAt = &t
	}
	ws, err := m.workspaces.WorkspaceID(ctx, userID, req.Workspace)
	if errors.Is(err, ErrWorkspaceNotFound) {
		return Created{}, invalid.One("workspace_id", "no such workspace")
	}
	if err != nil {
		return Created{}, err
	}
	token, k, err := NewKey()
	if err != nil {
		return Created{}, err
	}
	k.UserID, k.CreatorUserID, k.Role, k.WorkspaceID = userID, userID, RoleStandard, ws
	k.Name, k.CreatedAt, k.ExpiresAt = *req.Name, now, req.ExpiresAt
	k.Limit, k.LimitReset, k.IncludeBYOKInLimit = req.Limit, req.LimitReset, req.IncludeBYOKInLimit
	secret := seal.NewSecret(token)

	var idem *Idempotency
	if idempotencyKey != "" {
		if m.sealer == nil {
			return Created{}, ErrIdempotencyUnavailable
		}
		sealed, err := m.sealer.Seal(userID, ScopeCreate+":"+idempotencyKey, secret)
		if err != nil {
			return Created{}, err
		}
		idem = &Idempotency{
			UserID: userID, Key: idempotencyKey, RequestHash: requestHash(req, ws),
			KeyID: k.ID, Sealed: sealed, CreatedAt: now,
		}
	}
	prior, err := m.store.CreateKeyOnce(ctx, k, idem)
	if err != nil {
		return Created{}, err
	}
	if prior == nil {
		if k.Limit != nil {
			m.tellLimits(ctx)
		}
		return Created{Key: k, Secret: secret}, nil
	}
	if prior.RequestHash != idem.RequestHash {
		return Created{}, ErrIdempotencyMismatch
	}
	first, err := m.store.UserKey(ctx, userID, prior.KeyID)
	if err != nil {
		return Created{}, err
	}
	secret, err = m.sealer.Open(userID, ScopeCreate+":"+idempotencyKey, prior.Sealed)
	if err != nil {
		return Created{}, fmt.Errorf("keys: open the secret of a replayed creation: %w", err)
	}
	return Created{Key: first, Secret: secret, Replayed: true}, nil
}

// requestHash identifies a creation request for idempotency: the typed
// request with its workspace resolved, so the same request means the same
// thing.
func requestHash(req CreateRequest, workspaceID string) string {
	b, _ := json.Marshal(struct {
		R  CreateRequest
		WS string
	}{req, workspaceID})
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// Get returns userID's key id.
func (m *Manager) Get(ctx context.Context, userID, id string) (APIKey, error) {
	if _, ok := ParseID(id); !ok {
		return APIKey{}, ErrKeyNotFound
	}
	k, err := m.store.UserKey(ctx, userID, id)
	if err != nil {
		return APIKey{}, err
	}
	page := []APIKey{k}
	err = m.showWorkspaces(ctx, userID, page)
	return page[0], err
}

// showWorkspaces names, for the keys bound to no workspace (management and
// service keys), the user's default workspace: the one they act in when a
// request names none, and what clients of the Key resource expect to find.
func (m *Manager) showWorkspaces(ctx context.Context, userID string, page []APIKey) error {
	var def string
	for i := range page {
		if page[i].WorkspaceID != "" {
			continue
		}
		if def == "" {
			ws, err := m.workspaces.WorkspaceID(ctx, userID, "")
			if err != nil {
				return err
			}
			def = ws
		}
		page[i].WorkspaceID = def
	}
	return nil
}

// List returns the page of userID's keys that q selects; q.Limit is set to
// PageSize.
func (m *Manager) List(ctx context.Context, userID string, q ListQuery) ([]APIKey, error) {
	if q.WorkspaceID != "" {
		ws, err := m.workspaces.WorkspaceID(ctx, userID, q.WorkspaceID)
		if errors.Is(err, ErrWorkspaceNotFound) {
			return []APIKey{}, nil
		}
		if err != nil {
			return nil, err
		}
		q.WorkspaceID = ws
	}
	q.Limit = PageSize
	page, err := m.store.ListKeys(ctx, userID, q)
	if err != nil {
		return nil, err
	}
	return page, m.showWorkspaces(ctx, userID, page)
}

// Update applies u, checked as UpdateRequest.Check does (every problem at
// once in *invalid.Problems, nothing changed), to userID's standard key id.
func (m *Manager) Update(ctx context.Context, userID, id string, u UpdateRequest) (APIKey, error) {
	var p invalid.Problems
	u.Check(&p)
	if err := p.Err(); err != nil {
		return APIKey{}, err
	}
	if _, ok := ParseID(id); !ok {
		return APIKey{}, ErrKeyNotFound
	}
	if u.Empty() {
		// Nothing to change, but the same answer as a change: a key of
		// another role is the CLI's, whatever the body holds.
		k, err := m.store.UserKey(ctx, userID, id)
		if err == nil && k.Role != RoleStandard {
			return APIKey{}, ErrManagedByCLI
		}
		return k, err
	}
	k, err := m.store.UpdateKey(ctx, userID, id, u, m.now().UTC().Truncate(time.Microsecond))
	if err == nil && (u.Limit.Set || u.LimitReset.Set || u.IncludeBYOKInLimit.Set) {
		m.tellLimits(ctx)
	}
	return k, err
}

// Delete removes userID's standard key id.
func (m *Manager) Delete(ctx context.Context, userID, id string) error {
	if _, ok := ParseID(id); !ok {
		return ErrKeyNotFound
	}
	return m.store.DeleteKey(ctx, userID, id, m.now().UTC().Truncate(time.Microsecond))
}
