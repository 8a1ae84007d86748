package workspace

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
)

// Errors of the workspace store and service.
var (
	// ErrNotFound: no such workspace for this user. A workspace of another
	// user is reported the same way, so lookups never reveal it exists.
	ErrNotFound = errors.New("workspace not found")
	// ErrSlugTaken: the user already has a workspace with this slug. The
	// store's unique constraint decides, never a read before the write.
	ErrSlugTaken = errors.New("workspace slug already exists")
	// ErrInvalid: the request body is invalid; *InvalidError carries the fields.
	ErrInvalid = errors.New("invalid workspace request")
	// ErrIdempotencyMismatch: an Idempotency-Key was reused with another body.
	ErrIdempotencyMismatch = errors.New("idempotency key reused with a different request")
	// ErrDefaultSlug: an update would rename the user's default workspace,
	// which Default finds by its slug.
	ErrDefaultSlug = errors.New("the default workspace's slug cannot change")
	// ErrNotDeletable: the workspace was not deleted; *NotDeletableError
	// says why.
	ErrNotDeletable = errors.New("workspace not deletable")
)

// Workspace is the spec's Workspace resource; its JSON is the response shape.
type Workspace struct {
	ID                              string     `json:"id"`
	Name                            string     `json:"name"`
	Slug                            string     `json:"slug"`
	Description                     string     `json:"description"`
	DefaultTextModel                *string    `json:"default_text_model"`
	DefaultImageModel               *string    `json:"default_image_model"`
	DefaultProviderSort             *string    `json:"default_provider_sort"`
	DefaultGuardrailID              string     `json:"default_guardrail_id"`
	CreatedBy                       string     `json:"created_by"`
	CreatedAt                       time.Time  `json:"created_at"`
	UpdatedAt                       *time.Time `json:"updated_at"`
	IncludeBYOKInBudgets            bool       `json:"include_byok_in_budgets"`
	IOLoggingAPIKeyIDs              []string   `json:"io_logging_api_key_ids"`
	IOLoggingSamplingRate           float64    `json:"io_logging_sampling_rate"`
	IsDataDiscountLoggingEnabled    bool       `json:"is_data_discount_logging_enabled"`
	IsObservabilityBroadcastEnabled bool       `json:"is_observability_broadcast_enabled"`
	IsObservabilityIOLoggingEnabled bool       `json:"is_observability_io_logging_enabled"`
}

// Idempotency is the record of one idempotent request: the request it
// answered (by hash) and the workspace it answered with, replayed to
// retries. Records are scoped: a key used for a creation and the same key
// used for an update are two records.
type Idempotency struct {
	UserID      string
	Scope       string // ScopeCreate or ScopeUpdate
	Key         string
	RequestHash string // hex SHA-256 of the canonical request
	// Workspace is the answer. The store keeps it exactly (its JSON encoding
	// round-trips), so a replay is byte-identical to the first answer.
	Workspace Workspace
	CreatedAt time.Time
}

// Scopes of idempotency records.
const (
	ScopeCreate = "workspace.create"
	ScopeUpdate = "workspace.update"
)

// IdempotencyTTL is how long an Idempotency-Key is remembered.
const IdempotencyTTL = 24 * time.Hour

// Ref names a workspace by id or by slug, as a path segment does. A
// segment shaped like a UUID is also a well-formed slug, so both may be
// set: the id is tried first.
type Ref struct {
	ID   string // a UUID, in any case; "" when the segment is not one
	Slug string // "" when the segment is not a well-formed slug
}

// ParseRef reads a path segment; ok is false when it can name no workspace.
func ParseRef(idOrSlug string) (ref Ref, ok bool) {
	if idShaped(idOrSlug) {
		ref.ID = idOrSlug
	}
	if ValidSlug(idOrSlug) {
		ref.Slug = idOrSlug
	}
	return ref, ref.ID != "" || ref.Slug != ""
}

// idShaped says whether s is a UUID in its 36-character form, the form of
// a workspace's id.
func idShaped(s string) bool {
	_, err := uuid.Parse(s)
	return err == nil && len(s) == 36
}

// NotDeletableError says why a workspace was not deleted. It unwraps to
// ErrNotDeletable; its fields are safe to show the workspace's owner. When
// Default is set the counts are not looked at (and may be zero).
type NotDeletableError struct {
	Default bool // it is the user's default workspace
	Files   int  // stored files
	Keys    int  // API keys bound to it
	Uploads int  // uploads in progress (unexpired quota reservations)
}

func (e *NotDeletableError) Error() string {
	if e.Default {
		return "workspace not deletable: it is the default workspace"
	}
	return fmt.Sprintf("workspace not deletable: %d files, %d keys, %d uploads in progress", e.Files, e.Keys, e.Uploads)
}

// Unwrap makes errors.Is(err, ErrNotDeletable) hold.
func (e *NotDeletableError) Unwrap() error { return ErrNotDeletable }

// Store persists workspaces. Implementations are safe for concurrent use.
type Store interface {
	// CreateWorkspace inserts w, or returns ErrSlugTaken when w.CreatedBy
	// already has w.Slug.
	//
	// When idem is not nil (Scope ScopeCreate, Workspace w), the record is
	// written in the same transaction as the workspace. If an unexpired
	// record (younger than IdempotencyTTL) for (idem.UserID, idem.Scope,
	// idem.Key) already exists, nothing is created and that record is
	// returned as prior (err nil); the caller compares request hashes and
	// replays. Concurrent calls with one key create at most one workspace: the
	// losers wait for the winner's commit and get its record.
	CreateWorkspace(ctx context.Context, w Workspace, idem *Idempotency) (prior *Idempotency, err error)
	// WorkspaceByID returns the workspace id owned by userID, or ErrNotFound.
	WorkspaceByID(ctx context.Context, userID, id string) (Workspace, error)
	// WorkspaceBySlug returns userID's workspace with slug, or ErrNotFound.
	WorkspaceBySlug(ctx context.Context, userID, slug string) (Workspace, error)
	// ListWorkspaces returns at most limit of userID's workspaces, skipping
	// offset, ordered by created_at then id, and how many the user has.
	ListWorkspaces(ctx context.Context, userID string, offset, limit int) (page []Workspace, total int, err error)
	// UpdateWorkspace writes the Set fields of u to userID's workspace ref
	// and sets updated_at to at, in one statement, so concurrent updates of
	// different fields all land. An empty u writes nothing (updated_at
	// included) and returns the workspace as it is. ErrNotFound for no such
	// workspace; ErrSlugTaken when another of the user's workspaces has the
	// new slug (the unique constraint decides); ErrDefaultSlug when u would
	// change the slug of the workspace whose slug is DefaultSlug (checked
	// under the row's lock, so the default can never be renamed away).
	//
	// With idem not nil (Scope ScopeUpdate), the key is claimed before ref
	// is resolved, in the same transaction: an unexpired record is returned
	// as prior and nothing is written, so a retry is replayed even after the
	// first request renamed the slug it was addressed by. Otherwise the
	// record is written with the updated workspace; it is not kept when the
	// update fails.
	UpdateWorkspace(ctx context.Context, userID string, ref Ref, u UpdateRequest, at time.Time, idem *Idempotency) (w Workspace, prior *Idempotency, err error)
	// DeleteWorkspace removes userID's workspace ref with what only it uses
	// (its stored provider keys, its usage counter), or changes nothing and
	// returns *NotDeletableError when it is the default workspace (slug
	// DefaultSlug) or still has files, keys or unexpired quota reservations.
	// The check and the delete are one transaction that holds the
	// workspace's quota lock, so an upload either commits before the delete
	// (which is then refused) or finds the workspace gone; no file is ever
	// left in a deleted workspace. ErrNotFound for no such workspace.
	DeleteWorkspace(ctx context.Context, userID string, ref Ref) error
}
