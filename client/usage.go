package client

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"time"
)

// UsageReport is the cost of one billed request of a key. ID must be unique
// per report: the gateway counts a report once however often it is sent.
type UsageReport struct {
	ID      string `json:"id"`
	KeyHash string `json:"key"`
	// Cost in US dollars, at most 6 decimals.
	Cost float64 `json:"cost"`
	BYOK bool    `json:"byok,omitempty"`
	// At is when the request ran; zero: now. At most 35 days old.
	At time.Time `json:"-"`
	// What was served, all optional: the model id (author/slug), who
	// served it, the provider endpoint's id and the request's tokens. A
	// report sent again must say the same: an id counted with other
	// content is refused (409) with its whole batch.
	Model            string `json:"model,omitempty"`
	ProviderName     string `json:"provider_name,omitempty"`
	EndpointID       string `json:"endpoint_id,omitempty"`
	PromptTokens     int64  `json:"prompt_tokens,omitempty"`
	CompletionTokens int64  `json:"completion_tokens,omitempty"`
	ReasoningTokens  int64  `json:"reasoning_tokens,omitempty"`
}

// MaxUsageBatch is the most reports the gateway takes in one request.
const MaxUsageBatch = 1000

// UsageResult counts the reports the gateway counted (Accepted) and those
// it had counted before (Duplicates).
type UsageResult struct {
	Accepted   int `json:"accepted"`
	Duplicates int `json:"duplicates"`
}

type usageWire struct {
	ID      string  `json:"id"`
	KeyHash string  `json:"key"`
	Cost    float64 `json:"cost"`
	BYOK    bool    `json:"byok,omitempty"`
	At      string  `json:"at,omitempty"`

	Model            string `json:"model,omitempty"`
	ProviderName     string `json:"provider_name,omitempty"`
	EndpointID       string `json:"endpoint_id,omitempty"`
	PromptTokens     int64  `json:"prompt_tokens,omitempty"`
	CompletionTokens int64  `json:"completion_tokens,omitempty"`
	ReasoningTokens  int64  `json:"reasoning_tokens,omitempty"`
}

// ReportUsage sends reports (a service key's call) in batches of up to
// MaxUsageBatch, in order. Each batch is all or nothing and is retried
// after a 429 or 503 (reports are counted once by id, so a retry never
// counts twice). It stops at the first batch refused; the result counts the
// batches sent before it, and the error says which report was at fault.
func (c *Client) ReportUsage(ctx context.Context, reports []UsageReport) (UsageResult, error) {
	var total UsageResult
	for start := 0; start < len(reports); start += MaxUsageBatch {
		batch := reports[start:min(start+MaxUsageBatch, len(reports))]
		wire := make([]usageWire, len(batch))
		for i, r := range batch {
			wire[i] = usageWire{ID: r.ID, KeyHash: r.KeyHash, Cost: r.Cost, BYOK: r.BYOK,
				Model: r.Model, ProviderName: r.ProviderName, EndpointID: r.EndpointID,
				PromptTokens: r.PromptTokens, CompletionTokens: r.CompletionTokens, ReasoningTokens: r.ReasoningTokens}
			if !r.At.IsZero() {
				wire[i].At = r.At.UTC().Format(time.RFC3339Nano)
			}
		}
		out, err := sendData[UsageResult](ctx, c, http.MethodPost, "/usage", nil, struct {
			Reports []usageWire `json:"reports"`
		}{wire}, true)
		if err != nil {
			return total, fmt.Errorf("client: reports %d to %d: %w", start, start+len(batch)-1, err)
		}
		total.Accepted += out.Accepted
		total.Duplicates += out.Duplicates
	}
	return total, nil
}

// Budget is a workspace's spending cap for one interval.
type Budget struct {
	ID          string  `json:"id"`
	WorkspaceID string  `json:"workspace_id"`
	LimitUSD    float64 `json:"limit_usd"`
	// ResetInterval is daily, weekly or monthly; nil for the lifetime one.
	ResetInterval *string   `json:"reset_interval"`
	CreatedAt     time.Time `json:"created_at"`
	UpdatedAt     time.Time `json:"updated_at"`
}

// SetBudget creates or replaces the workspace's budget of interval (daily,
// weekly, monthly or lifetime); includeBYOK, when not nil, sets whether
// BYOK usage counts toward all its budgets.
func (c *Client) SetBudget(ctx context.Context, workspace, interval string, limitUSD float64, includeBYOK *bool) (*Budget, error) {
	return sendData[Budget](ctx, c, http.MethodPut, budgetPath(workspace, interval), nil, struct {
		LimitUSD    float64 `json:"limit_usd"`
		IncludeBYOK *bool   `json:"include_byok_in_budgets,omitempty"`
	}{limitUSD, includeBYOK}, true)
}

// Budgets returns the workspace's budgets, lifetime first, and whether BYOK
// usage counts toward them.
func (c *Client) Budgets(ctx context.Context, workspace string) ([]Budget, bool, error) {
	out, err := get[struct {
		Data        []Budget `json:"data"`
		IncludeBYOK bool     `json:"include_byok_in_budgets"`
	}](ctx, c, "/workspaces/"+url.PathEscape(workspace)+"/budgets", nil)
	if err != nil {
		return nil, false, err
	}
	return out.Data, out.IncludeBYOK, nil
}

// DeleteBudget removes the workspace's budget of interval.
func (c *Client) DeleteBudget(ctx context.Context, workspace, interval string) error {
	return c.remove(ctx, budgetPath(workspace, interval), nil)
}

func budgetPath(workspace, interval string) string {
	return "/workspaces/" + url.PathEscape(workspace) + "/budgets/" + url.PathEscape(interval)
}

// DailyQuery selects the usage history DailyUsage returns. Give at most one
// of Workspace and KeyHash; neither is every key of the user (for a
// management key) or the calling key itself (for any other key).
type DailyQuery struct {
	// Days is how many UTC days, ending today: 1 to 90; 0 means the
	// gateway's default, 30.
	Days int
	// Workspace is an id or slug: the usage of all its keys, deleted ones
	// included.
	Workspace string
	// KeyHash is one key's hash: that key's usage.
	KeyHash string
}

// DayUsage is the usage of one UTC day.
type DayUsage struct {
	// Date is the day, YYYY-MM-DD (UTC).
	Date string `json:"date"`
	// Usage is what the day's requests cost in US dollars, BYOK ones
	// included; BYOKUsage is the part served with a BYOK provider key.
	Usage     float64 `json:"usage"`
	BYOKUsage float64 `json:"byok_usage"`
}

// Day is the day's date as a time at 00:00 UTC.
func (d DayUsage) Day() (time.Time, error) {
	return time.Parse(time.DateOnly, d.Date)
}

// DailyUsage returns the usage per UTC day, oldest first, one entry per
// day (a day without usage is zero), the last one today. A standard or
// service key may ask for itself or its own workspace only (403 otherwise);
// a management key for any key or workspace of its user (404 for one it
// does not have).
func (c *Client) DailyUsage(ctx context.Context, q DailyQuery) ([]DayUsage, error) {
	query := url.Values{}
	if q.Days != 0 {
		query.Set("days", strconv.Itoa(q.Days))
	}
	if q.Workspace != "" {
		query.Set("workspace_id", q.Workspace)
	}
	if q.KeyHash != "" {
		query.Set("key", q.KeyHash)
	}
	days, err := getData[[]DayUsage](ctx, c, "/usage/daily", query)
	if err != nil {
		return nil, err
	}
	return *days, nil
}
