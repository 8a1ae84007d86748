package client

import (
	"context"
	"encoding/json"
	"iter"
	"net/http"
	"net/url"
	"strconv"
	"time"
)

// Workspace is a workspace of the key's user.
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

// WorkspaceCreate is a new workspace. Name and Slug are required; nil
// fields take the gateway's defaults.
type WorkspaceCreate struct {
	Name                            string   `json:"name"`
	Slug                            string   `json:"slug"`
	Description                     *string  `json:"description,omitempty"`
	DefaultTextModel                *string  `json:"default_text_model,omitempty"`
	DefaultImageModel               *string  `json:"default_image_model,omitempty"`
	DefaultProviderSort             *string  `json:"default_provider_sort,omitempty"`
	IOLoggingAPIKeyIDs              []string `json:"io_logging_api_key_ids,omitempty"`
	IOLoggingSamplingRate           *float64 `json:"io_logging_sampling_rate,omitempty"`
	IsDataDiscountLoggingEnabled    *bool    `json:"is_data_discount_logging_enabled,omitempty"`
	IsObservabilityBroadcastEnabled *bool    `json:"is_observability_broadcast_enabled,omitempty"`
	IsObservabilityIOLoggingEnabled *bool    `json:"is_observability_io_logging_enabled,omitempty"`

	// IdempotencyKey makes a creation sent again (by this process after a
	// restart, say) answer the first one's workspace for 24 hours. Empty:
	// the client makes one up per call, which still covers its own
	// retries.
	IdempotencyKey string `json:"-"`
}

// Field is one field of a partial update: left out (the zero Field), set
// to a value (Set) or cleared (Null).
type Field[T any] struct {
	set, null bool
	v         T
}

// Set changes a field to v.
func Set[T any](v T) Field[T] { return Field[T]{set: true, v: v} }

// Null clears a nullable field (description to "", the default models, the
// provider sort and the key-id filter to null).
func Null[T any]() Field[T] { return Field[T]{set: true, null: true} }

func (f Field[T]) put(m map[string]any, name string) {
	switch {
	case !f.set:
	case f.null:
		m[name] = nil
	default:
		m[name] = f.v
	}
}

// WorkspaceUpdate changes the fields given and leaves the others alone.
type WorkspaceUpdate struct {
	Name                            Field[string]
	Slug                            Field[string]
	Description                     Field[string]
	DefaultTextModel                Field[string]
	DefaultImageModel               Field[string]
	DefaultProviderSort             Field[string]
	IOLoggingAPIKeyIDs              Field[[]string]
	IOLoggingSamplingRate           Field[float64]
	IsDataDiscountLoggingEnabled    Field[bool]
	IsObservabilityBroadcastEnabled Field[bool]
	IsObservabilityIOLoggingEnabled Field[bool]

	// IdempotencyKey: as in WorkspaceCreate.
	IdempotencyKey string
}

// MarshalJSON writes only the fields given.
func (u WorkspaceUpdate) MarshalJSON() ([]byte, error) {
	m := map[string]any{}
	u.Name.put(m, "name")
	u.Slug.put(m, "slug")
	u.Description.put(m, "description")
	u.DefaultTextModel.put(m, "default_text_model")
	u.DefaultImageModel.put(m, "default_image_model")
	u.DefaultProviderSort.put(m, "default_provider_sort")
	u.IOLoggingAPIKeyIDs.put(m, "io_logging_api_key_ids")
	u.IOLoggingSamplingRate.put(m, "io_logging_sampling_rate")
	u.IsDataDiscountLoggingEnabled.put(m, "is_data_discount_logging_enabled")
	u.IsObservabilityBroadcastEnabled.put(m, "is_observability_broadcast_enabled")
	u.IsObservabilityIOLoggingEnabled.put(m, "is_observability_io_logging_enabled")
	return json.Marshal(m)
}

// CreateWorkspace creates a workspace of the key's user (a management
// key). It is sent with an Idempotency-Key, so it is retried safely.
func (c *Client) CreateWorkspace(ctx context.Context, w WorkspaceCreate) (*Workspace, error) {
	return c.writeWorkspace(ctx, http.MethodPost, "/workspaces", w, w.IdempotencyKey)
}

// UpdateWorkspace changes the fields of u in the workspace idOrSlug (a
// management key). It is sent with an Idempotency-Key, so it is retried
// safely.
func (c *Client) UpdateWorkspace(ctx context.Context, idOrSlug string, u WorkspaceUpdate) (*Workspace, error) {
	return c.writeWorkspace(ctx, http.MethodPatch, "/workspaces/"+url.PathEscape(idOrSlug), u, u.IdempotencyKey)
}

func (c *Client) writeWorkspace(ctx context.Context, method, path string, v any, key string) (*Workspace, error) {
	if key == "" {
		key = idempotencyKey()
	}
	return sendData[Workspace](ctx, c, method, path, http.Header{"Idempotency-Key": {key}}, v, true)
}

// GetWorkspace returns the workspace with that id or slug (a management key).
func (c *Client) GetWorkspace(ctx context.Context, idOrSlug string) (*Workspace, error) {
	return getData[Workspace](ctx, c, "/workspaces/"+url.PathEscape(idOrSlug), nil)
}

// DeleteWorkspace removes an empty workspace (a management key). The
// user's default workspace, and one still holding files or keys, are
// refused with a 400 whose Metadata says what is left.
func (c *Client) DeleteWorkspace(ctx context.Context, idOrSlug string) error {
	return c.remove(ctx, "/workspaces/"+url.PathEscape(idOrSlug), nil)
}

// WorkspacePage is one page of the user's workspaces.
type WorkspacePage struct {
	Workspaces []Workspace `json:"data"`
	// Total is the number of the user's workspaces.
	Total int `json:"total_count"`
}

// ListWorkspaces returns up to limit (1 to 100) of the user's workspaces,
// oldest first, skipping offset of them.
func (c *Client) ListWorkspaces(ctx context.Context, offset, limit int) (*WorkspacePage, error) {
	q := url.Values{"offset": {strconv.Itoa(offset)}, "limit": {strconv.Itoa(limit)}}
	return get[WorkspacePage](ctx, c, "/workspaces", q)
}

// Workspaces yields every workspace of the user, oldest first, fetching
// pageSize (1 to 100) at a time. It stops at the first error, which it
// yields. A workspace created or deleted during the walk may shift the
// pages: offsets are what the API offers.
func (c *Client) Workspaces(ctx context.Context, pageSize int) iter.Seq2[Workspace, error] {
	return items(pages(0, func(offset int) (*WorkspacePage, int, bool, error) {
		p, err := c.ListWorkspaces(ctx, offset, pageSize)
		if err != nil {
			return nil, 0, false, err
		}
		n := len(p.Workspaces)
		return offsetPage(p, offset, n, n >= pageSize && offset+n < p.Total)
	}), func(p *WorkspacePage) []Workspace { return p.Workspaces })
}
