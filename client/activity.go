package client

import (
	"context"
	"net/url"
	"time"
)

// ActivityQuery selects the rows Activity returns; the zero value is every
// key of the user over the last 30 completed UTC days.
type ActivityQuery struct {
	// Date is one of the last 30 completed UTC days; zero: all of them.
	Date time.Time
	// KeyHash narrows to one key, Workspace (id or slug) to one workspace.
	KeyHash, Workspace string
	// ByWorkspace splits the rows per workspace (group_by=workspace).
	ByWorkspace bool
}

// ActivityItem is what was spent on one UTC day on one model, endpoint and
// provider (and in one workspace, asked per workspace).
type ActivityItem struct {
	Date           string `json:"date"`
	Model          string `json:"model"`
	ModelPermaslug string `json:"model_permaslug"`
	EndpointID     string `json:"endpoint_id"`
	ProviderName   string `json:"provider_name"`
	// Usage is in US dollars, BYOK requests included; BYOKUsage is the
	// part served with a BYOK provider key.
	Usage            float64 `json:"usage"`
	BYOKUsage        float64 `json:"byok_usage_inference"`
	Requests         int64   `json:"requests"`
	PromptTokens     int64   `json:"prompt_tokens"`
	CompletionTokens int64   `json:"completion_tokens"`
	ReasoningTokens  int64   `json:"reasoning_tokens"`
	WorkspaceID      *string `json:"workspace_id,omitempty"`
}

// Activity returns what the user's keys spent on (a management key's
// call): newest day first, then by usage, most first, then by model.
func (c *Client) Activity(ctx context.Context, q ActivityQuery) ([]ActivityItem, error) {
	query := url.Values{}
	if !q.Date.IsZero() {
		query.Set("date", q.Date.UTC().Format(time.DateOnly))
	}
	if q.KeyHash != "" {
		query.Set("api_key_hash", q.KeyHash)
	}
	if q.Workspace != "" {
		query.Set("workspace_id", q.Workspace)
	}
	if q.ByWorkspace {
		query.Set("group_by", "workspace")
	}
	rows, err := getData[[]ActivityItem](ctx, c, "/activity", query)
	if err != nil {
		return nil, err
	}
	return *rows, nil
}
