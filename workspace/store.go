package workspace

import (
	"context"
	"errors"
	"time"
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

// Idempotency is the record of one idempotent creation: the request it
// answered (by hash) and the response it gave, replayed to retries.
type Idempotency struct {
	UserID      string
	Key         string
	RequestHash string // hex SHA-256 of the canonical request
	Status      int
	Body        []byte
	CreatedAt   time.Time
}

// IdempotencyTTL is how long an Idempotency-Key is remembered.
const IdempotencyTTL = 24 * time.Hour

// Store persists workspaces. Implementations are safe for concurrent use.
type Store interface {
	// CreateWorkspace inserts w, or returns ErrSlugTaken when w.CreatedBy
	// already has w.Slug.
	//
	// When idem is not nil, the record is written in the same transaction as
	// the workspace. If an unexpired record (younger than IdempotencyTTL) for
	// (idem.UserID, idem.Key) already exists, nothing is created and that
	// record is returned as prior (err nil); the caller compares request
	// hashes and replays. Concurrent calls with one key create at most one
	// workspace: the losers wait for the winner's commit and get its record.
	CreateWorkspace(ctx context.Context, w Workspace, idem *Idempotency) (prior *Idempotency, err error)
	// WorkspaceByID returns the workspace id owned by userID, or ErrNotFound.
	WorkspaceByID(ctx context.Context, userID, id string) (Workspace, error)
	// WorkspaceBySlug returns userID's workspace with slug, or ErrNotFound.
	WorkspaceBySlug(ctx context.Context, userID, slug string) (Workspace, error)
}
