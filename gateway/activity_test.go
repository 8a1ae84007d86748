package gateway

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/aigateway/gateway/policy/keys"
	"github.com/aigateway/gateway/policy/spend"
)

// activitySpend answers Activity with two rows and records the query.
type activitySpend struct {
	SpendService
	q spend.ActivityQuery
}

func (a *activitySpend) Activity(_ context.Context, _ *keys.APIKey, q spend.ActivityQuery, _ spend.WorkspaceLookup) ([]spend.ActivityRow, error) {
	a.q = q
	day := spend.Day(time.Date(2026, 11, 24, 0, 0, 0, 0, time.UTC))
	return []spend.ActivityRow{
		{Day: day, Model: "aion-labs/aion-2.0", Endpoint: "e1", Provider: "AionLabs", WorkspaceID: "w1", Cost: 1_500_000, BYOK: 500_000,
			Requests: 3, PromptTokens: 10, CompletionTokens: 20, ReasoningTokens: 5},
		{Day: day, Model: "someone/unknown", Cost: 1},
	}, nil
}

// TestActivityRoute: GET /activity reads its query, names the catalog's
// canonical slug of each model (the model itself when unknown) and gives
// workspace_id only per workspace.
func TestActivityRoute(t *testing.T) {
	auth := fakeAuth{"mgmt": {ID: "00000000000000c1", UserID: "u1", Role: keys.RoleManagement}}
	svc := &activitySpend{}
	api, _ := newTestAPI(t, Options{Auth: auth, Spend: svc, Catalog: shippedCatalog(t)})
	h := api.Handler()
	rec := do(t, h, "GET", apiPrefix+"/activity?date=2026-11-24&workspace_id=team&user_id=u1", "mgmt", nil)
	if rec.Code != http.StatusOK {
		t.Fatalf("%d %s", rec.Code, rec.Body)
	}
	var got struct{ Data []map[string]any }
	if err := json.Unmarshal(rec.Body.Bytes(), &got); err != nil {
		t.Fatal(err)
	}
	if len(got.Data) != 2 {
		t.Fatalf("rows: %s", rec.Body)
	}
	first := got.Data[0]
	want := map[string]any{"date": "2026-11-24", "model": "aion-labs/aion-2.0", "model_permaslug": "aion-labs/aion-2.0-20260223",
		"endpoint_id": "e1", "provider_name": "AionLabs", "usage": 1.5, "byok_usage_inference": 0.5, "requests": 3.0,
		"prompt_tokens": 10.0, "completion_tokens": 20.0, "reasoning_tokens": 5.0}
	for k, v := range want {
		if first[k] != v {
			t.Errorf("%s = %v, want %v", k, first[k], v)
		}
	}
	if _, ok := first["workspace_id"]; ok || got.Data[1]["model_permaslug"] != "someone/unknown" {
		t.Errorf("rows: %s", rec.Body)
	}
	if !svc.q.Date.Equal(time.Date(2026, 11, 24, 0, 0, 0, 0, time.UTC)) || svc.q.Workspace != "team" || svc.q.UserID != "u1" || svc.q.ByWorkspace {
		t.Errorf("query read as %+v", svc.q)
	}
	rec = do(t, h, "GET", apiPrefix+"/activity?group_by=workspace&api_key_hash=00000000000000a1", "mgmt", nil)
	if rec.Code != http.StatusOK || !svc.q.ByWorkspace || svc.q.KeyID != "00000000000000a1" {
		t.Fatalf("per workspace: %d %s, %+v", rec.Code, rec.Body, svc.q)
	}
	_ = json.Unmarshal(rec.Body.Bytes(), &got)
	if got.Data[0]["workspace_id"] != "w1" {
		t.Errorf("per workspace: %s", rec.Body)
	}
	for query, field := range map[string]string{
		"?date=2026-11-31": "date",
		"?date=yesterday":  "date",
		"?group_by=model":  "group_by",
		"?days=3":          "days",
		"?user_id=":        "user_id",
		"?date=1&date=2":   "date",
		"?api_key_hash=":   "api_key_hash",
		"?workspace_id=":   "workspace_id",
	} {
		rec := do(t, h, "GET", apiPrefix+"/activity"+query, "mgmt", nil)
		env := decodeEnvelope(t, rec)
		if fields, _ := env.Error.Metadata["fields"].(map[string]any); rec.Code != http.StatusBadRequest || fields[field] == nil {
			t.Errorf("%s: %d %+v, want 400 naming %s", query, rec.Code, env, field)
		}
	}
}
