package gateway

import (
	"net/http"
	"net/url"
	"time"

	"github.com/aigateway/gateway/internal/money"
	"github.com/aigateway/gateway/policy/keys"
	"github.com/aigateway/gateway/policy/spend"
)

// activityItem is the spec's ActivityItem: amounts exact to the
// millionth, as the Key resource's usage fields are.
type activityItem struct {
	Date               string       `json:"date"`
	Model              string       `json:"model"`
	ModelPermaslug     string       `json:"model_permaslug"`
	EndpointID         string       `json:"endpoint_id"`
	ProviderName       string       `json:"provider_name"`
	Usage              money.Micros `json:"usage"`
	BYOKUsageInference money.Micros `json:"byok_usage_inference"`
	Requests           int64        `json:"requests"`
	PromptTokens       int64        `json:"prompt_tokens"`
	CompletionTokens   int64        `json:"completion_tokens"`
	ReasoningTokens    int64        `json:"reasoning_tokens"`
	WorkspaceID        *string      `json:"workspace_id,omitempty"`
}

// activity answers GET /activity (analytics.md): a management key's daily
// rows of spend per model, endpoint and provider, of the last 30 completed
// UTC days or one of them.
func (a *API) activity(w http.ResponseWriter, r *http.Request, caller *keys.APIKey) error {
	q, err := parseActivityQuery(r.URL.Query())
	if err != nil {
		return err
	}
	rows, err := a.spend.Activity(r.Context(), caller, q, a.workspaceID)
	if err != nil {
		return err
	}
	out := make([]activityItem, len(rows))
	for i, row := range rows {
		out[i] = a.viewActivity(row, q.ByWorkspace)
	}
	writeJSON(w, http.StatusOK, struct {
		Data []activityItem `json:"data"`
	}{out})
	return nil
}

func (a *API) viewActivity(row spend.ActivityRow, byWorkspace bool) activityItem {
	v := activityItem{
		Date: time.Unix(row.Day*86400, 0).UTC().Format(time.DateOnly), Model: row.Model, ModelPermaslug: row.Model,
		EndpointID: row.Endpoint, ProviderName: row.Provider, Usage: row.Cost, BYOKUsageInference: row.BYOK,
		Requests: row.Requests, PromptTokens: row.PromptTokens, CompletionTokens: row.CompletionTokens,
		ReasoningTokens: row.ReasoningTokens,
	}
	if e, ok := a.catalog.Current().LookupID(row.Model); ok && e.Model != nil && e.Model.CanonicalSlug != "" {
		v.ModelPermaslug = e.Model.CanonicalSlug
	}
	if byWorkspace {
		ws := row.WorkspaceID
		v.WorkspaceID = &ws
	}
	return v
}

// parseActivityQuery reads date, api_key_hash, workspace_id, group_by and
// user_id; the domain judges which day, key, workspace and user may be
// asked for.
func parseActivityQuery(query url.Values) (spend.ActivityQuery, error) {
	var q spend.ActivityQuery
	err := readQuery(query, refuseUnknown, map[string]paramReader{
		"date": func(v string) string {
			d, err := time.Parse(time.DateOnly, v)
			if err != nil {
				return "must be a date (YYYY-MM-DD)"
			}
			q.Date = d
			return ""
		},
		"api_key_hash": func(v string) string {
			if v == "" || len(v) > 64 {
				return "must be a key hash"
			}
			q.KeyID = v
			return ""
		},
		"workspace_id": workspaceParam(&q.Workspace),
		"group_by": func(v string) string {
			if v != "workspace" {
				return "must be workspace"
			}
			q.ByWorkspace = true
			return ""
		},
		"user_id": func(v string) string {
			if v == "" {
				return "must be a user id"
			}
			q.UserID = v
			return ""
		},
	})
	return q, err
}
