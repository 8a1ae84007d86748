package gateway

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/aigateway/gateway/internal/invalid"
	"github.com/aigateway/gateway/internal/money"
	"github.com/aigateway/gateway/policy/keys"
	"github.com/aigateway/gateway/policy/spend"
	"github.com/aigateway/gateway/workspace"
)

// guardOf refuses the keys it holds.
type guardOf map[string]error

func (g guardOf) Decide(k *keys.APIKey) error { return g[k.ID] }

func TestEnforceSpend(t *testing.T) {
	guard := guardOf{
		standardKey.ID:   &spend.KeyLimitError{Limit: 5_000_000, Reset: keys.ResetDaily},
		managementKey.ID: &spend.BudgetError{WorkspaceID: "w1", Interval: spend.Lifetime, Limit: 1},
	}
	api, _ := newTestAPI(t, Options{SpendGuard: guard})
	h := api.Handler()

	rec := do(t, h, "GET", apiPrefix+"/models", "standard", nil)
	env := decodeEnvelope(t, rec)
	if rec.Code != http.StatusPaymentRequired || env.Error.Message != "Key limit exceeded" ||
		env.Error.Metadata["limit"] != 5.0 || env.Error.Metadata["limit_reset"] != "daily" {
		t.Errorf("key over its limit: %d %+v", rec.Code, env)
	}
	rec = do(t, h, "GET", apiPrefix+"/workspaces", "management", nil)
	env = decodeEnvelope(t, rec)
	if rec.Code != http.StatusPaymentRequired || env.Error.Message != "Workspace budget exceeded" ||
		env.Error.Metadata["interval"] != "lifetime" || env.Error.Metadata["resets_at"] != nil {
		t.Errorf("workspace over a budget: %d %+v", rec.Code, env)
	}
	// GET /key still answers: a refused key can read why.
	if rec := do(t, h, "GET", apiPrefix+"/key", "standard", nil); rec.Code != http.StatusOK {
		t.Errorf("GET /key of a refused key: %d", rec.Code)
	}
	if got := testutil.ToFloat64(api.spendMetrics.refused.WithLabelValues("key_limit")); got != 1 {
		t.Errorf("402s for key limits counted %v, want 1", got)
	}
}

// fakeBudgets creates every budget anew.
type fakeBudgets struct{ SpendService }

func (fakeBudgets) PutBudget(_ context.Context, ws string, iv spend.Interval, _ spend.BudgetRequest) (spend.Budget, bool, bool, error) {
	return spend.Budget{ID: "b", WorkspaceID: ws, Interval: iv, Limit: 1}, true, false, nil
}

func TestPutBudgetStatus(t *testing.T) {
	api, _ := newTestAPI(t, Options{Spend: fakeBudgets{}, Workspaces: &fakeWorkspaces{result: workspace.Result{Workspace: testWorkspace}}})
	h := api.Handler()
	for ua, want := range map[string]int{
		"curl/8.5.0": http.StatusCreated,
		"speakeasy-sdk/typescript 1.3.19 2.914.0 1.0.0 @openrouter/sdk": http.StatusOK,
	} {
		req := httptest.NewRequest("PUT", apiPrefix+"/workspaces/w1/budgets/daily", strings.NewReader(`{"limit_usd":1}`))
		req.Header.Set("Authorization", "Bearer management")
		req.Header.Set("User-Agent", ua)
		req.Header.Set("Content-Type", "application/json")
		rec := serve(h, req)
		if rec.Code != want {
			t.Errorf("%s: %d %s, want %d", ua, rec.Code, rec.Body, want)
		}
	}
	if rec := do(t, h, "PUT", apiPrefix+"/workspaces/w1/budgets/yearly", "management", strings.NewReader(`{"limit_usd":1}`)); rec.Code != http.StatusBadRequest {
		t.Errorf("unknown interval: %d", rec.Code)
	}
}

// historyStore holds the usage of the keys of two users on one day, and
// answers the history of a scope from it; the rules are spend's own.
type historyStore struct {
	spend.Store
	keyOf map[string]map[string]string // user -> key -> workspace
}

func (h historyStore) KeysOf(_ context.Context, userID string, ids []string) (map[string]string, error) {
	out := map[string]string{}
	for _, id := range ids {
		if ws, ok := h.keyOf[userID][id]; ok {
			out[id] = ws
		}
	}
	return out, nil
}

// DailyUsage gives each scope a cost of its own, so the answer shows which
// scope was summed: 1 for a key, 2 for a workspace, 3 for a user.
func (h historyStore) DailyUsage(_ context.Context, scope spend.DailyScope, _, last int64) ([]spend.DaySum, error) {
	cost := money.Micros(3_000_000)
	switch {
	case scope.KeyID != "":
		cost = 1_000_001
	case scope.WorkspaceID != "":
		cost = 2_000_000
	}
	return []spend.DaySum{{Day: last, Cost: cost, BYOK: 250_000}}, nil
}

// userWorkspaces resolves the workspaces of u1 (w1 "team", w2 "lab") and
// u2 (w9 "theirs") by id or slug.
type userWorkspaces struct{ WorkspaceService }

func (userWorkspaces) Get(_ context.Context, userID, ref string) (workspace.Workspace, error) {
	for _, w := range []workspace.Workspace{
		{ID: "11111111-1111-4111-8111-111111111111", Slug: "team", CreatedBy: "u1"},
		{ID: "22222222-2222-4222-8222-222222222222", Slug: "lab", CreatedBy: "u1"},
		{ID: "99999999-9999-4999-8999-999999999999", Slug: "theirs", CreatedBy: "u2"},
	} {
		if w.CreatedBy == userID && (w.ID == ref || w.Slug == ref) {
			return w, nil
		}
	}
	return workspace.Workspace{}, workspace.ErrNotFound
}

func TestDailyUsageRoute(t *testing.T) {
	const (
		team, lab, theirs      = "11111111-1111-4111-8111-111111111111", "22222222-2222-4222-8222-222222222222", "99999999-9999-4999-8999-999999999999"
		own, sibling, foreign  = "00000000000000a1", "00000000000000a2", "00000000000000b1"
		unknown                = "00000000000000ff"
		management, standard   = "mgmt", "std"
		service, otherStandard = "svc", "other"
	)
	auth := fakeAuth{
		management:    {ID: "00000000000000c1", UserID: "u1", Role: keys.RoleManagement},
		standard:      {ID: own, UserID: "u1", Role: keys.RoleStandard, WorkspaceID: team},
		service:       {ID: "00000000000000d1", UserID: "u1", Role: keys.RoleService},
		otherStandard: {ID: foreign, UserID: "u2", Role: keys.RoleStandard, WorkspaceID: theirs},
	}
	store := historyStore{keyOf: map[string]map[string]string{
		"u1": {own: team, sibling: lab},
		"u2": {foreign: theirs},
	}}
	api, _ := newTestAPI(t, Options{Auth: auth, Spend: spend.NewService(store, nil, nil), Workspaces: userWorkspaces{}})
	h := api.Handler()

	// The IDOR table: own, another user's and unknown keys and workspaces,
	// asked by a management and a standard key. Another user's id answers
	// exactly as an unknown one.
	cases := []struct {
		token, query string
		status       int
		usage        float64 // of the last day, when 200
	}{
		{management, "", 200, 3},
		{management, "?key=" + own, 200, 1.000001},
		{management, "?key=" + sibling, 200, 1.000001},
		{management, "?key=" + foreign, 404, 0},
		{management, "?key=" + unknown, 404, 0},
		{management, "?workspace_id=" + team, 200, 2},
		{management, "?workspace_id=lab", 200, 2},
		{management, "?workspace_id=" + theirs, 404, 0},
		{management, "?workspace_id=theirs", 404, 0},
		{management, "?workspace_id=nowhere", 404, 0},

		{standard, "", 200, 1.000001},
		{standard, "?key=" + own, 200, 1.000001},
		{standard, "?workspace_id=team", 200, 2},
		{standard, "?key=" + sibling, 403, 0},
		{standard, "?key=" + foreign, 403, 0},
		{standard, "?key=" + unknown, 403, 0},
		{standard, "?workspace_id=" + lab, 403, 0},
		{standard, "?workspace_id=" + theirs, 403, 0},
		{standard, "?workspace_id=nowhere", 403, 0},

		{service, "", 200, 1.000001},
		{service, "?key=" + own, 403, 0},
		{service, "?workspace_id=" + team, 403, 0},

		// The other user asking for u1's ids gets what u1 gets for theirs.
		{otherStandard, "?key=" + own, 403, 0},
		{otherStandard, "?workspace_id=" + team, 403, 0},
	}
	for _, c := range cases {
		rec := do(t, h, "GET", apiPrefix+"/usage/daily"+c.query, c.token, nil)
		if rec.Code != c.status {
			t.Errorf("%s %s: %d %s, want %d", c.token, c.query, rec.Code, rec.Body, c.status)
			continue
		}
		if c.status != http.StatusOK {
			env := decodeEnvelope(t, rec)
			if want := map[int]string{403: msgManagementOnly, 404: msgNotFound}[c.status]; env.Error.Message != want {
				t.Errorf("%s %s: message %q, want %q", c.token, c.query, env.Error.Message, want)
			}
			continue
		}
		var body struct {
			Data []struct {
				Date      string      `json:"date"`
				Usage     json.Number `json:"usage"`
				BYOKUsage json.Number `json:"byok_usage"`
			} `json:"data"`
		}
		dec := json.NewDecoder(rec.Body)
		dec.UseNumber()
		if err := dec.Decode(&body); err != nil {
			t.Fatal(err)
		}
		if len(body.Data) != spend.DefaultHistoryDays {
			t.Fatalf("%s %s: %d days, want %d", c.token, c.query, len(body.Data), spend.DefaultHistoryDays)
		}
		last := body.Data[len(body.Data)-1]
		if last.Date != time.Now().UTC().Format(time.DateOnly) || last.Usage.String() != strconv.FormatFloat(c.usage, 'f', -1, 64) ||
			last.BYOKUsage.String() != "0.25" || body.Data[0].Usage.String() != "0" {
			t.Errorf("%s %s: first %+v, last %+v; want today's usage %v", c.token, c.query, body.Data[0], last, c.usage)
		}
	}
}

func TestDailyUsageQuery(t *testing.T) {
	api, _ := newTestAPI(t, Options{Spend: spend.NewService(historyStore{}, nil, nil), Workspaces: userWorkspaces{}})
	h := api.Handler()
	for query, field := range map[string]string{
		"?days=0":                     "days",
		"?days=91":                    "days",
		"?days=7.5":                   "days",
		"?days=+7":                    "days",
		"?days=7&days=8":              "days",
		"?key=":                       "key",
		"?workspace_id=":              "workspace_id",
		"?limit=5":                    "limit",
		"?workspace_id=team&key=abcd": "key",
	} {
		rec := do(t, h, "GET", apiPrefix+"/usage/daily"+query, "management", nil)
		if rec.Code != http.StatusBadRequest {
			t.Errorf("%s: %d %s, want 400", query, rec.Code, rec.Body)
			continue
		}
		env := decodeEnvelope(t, rec)
		fields, _ := env.Error.Metadata["fields"].(map[string]any)
		if rec.Code != http.StatusBadRequest || fields[field] == nil {
			t.Errorf("%s: %d %s, want a 400 naming %s", query, rec.Code, rec.Body, field)
		}
	}
	for query, days := range map[string]int{"": 30, "?days=1": 1, "?days=90": 90} {
		rec := do(t, h, "GET", apiPrefix+"/usage/daily"+query, "management", nil)
		var body struct{ Data []json.RawMessage }
		if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil || rec.Code != 200 || len(body.Data) != days {
			t.Errorf("%q: %d, %d days, want %d", query, rec.Code, len(body.Data), days)
		}
	}
	// A key refused for spend is refused here too (only GET /key is not).
	api, _ = newTestAPI(t, Options{Spend: spend.NewService(historyStore{}, nil, nil),
		SpendGuard: guardOf{standardKey.ID: &spend.KeyLimitError{Limit: 1}}})
	if rec := do(t, api.Handler(), "GET", apiPrefix+"/usage/daily", "standard", nil); rec.Code != http.StatusPaymentRequired {
		t.Errorf("a key over its limit: %d, want 402", rec.Code)
	}
}

// TestSpendNotKnownYetIs503: a replica that has not read what is spent
// answers 503 with Retry-After, in the envelope, and serves nothing.
func TestSpendNotKnownYetIs503(t *testing.T) {
	api, _ := newTestAPI(t, Options{SpendGuard: guardOf{standardKey.ID: spend.ErrNotReady}})
	rec := do(t, api.Handler(), "GET", apiPrefix+"/models", "standard", nil)
	env := decodeEnvelope(t, rec)
	if rec.Code != http.StatusServiceUnavailable || env.Error.Code != 503 || rec.Header().Get("Retry-After") == "" {
		t.Errorf("before the first refresh: %d %+v, Retry-After %q; want 503 with Retry-After", rec.Code, env, rec.Header().Get("Retry-After"))
	}
}

// TestReadBatchServed: a report may say what was served; each field is
// read as the spec types it and refused, naming it, when it is not.
func TestReadBatchServed(t *testing.T) {
	store := &usageStore{}
	svc := spend.NewService(store, nil, nil)
	res, err := reportBatch(svc, []byte(`{"reports":[
		{"id":"r1","key":"00000000000000aa","cost":1,"model":"openai/gpt-4.1","provider_name":"OpenAI",
		 "endpoint_id":"ep-1","prompt_tokens":10,"completion_tokens":20,"reasoning_tokens":0},
		{"id":"r2","key":"00000000000000aa","cost":1,"model":null,"prompt_tokens":null}]}`))
	if err != nil || res.Accepted != 2 {
		t.Fatalf("ReportBatch = %+v, %v", res, err)
	}
	r := store.recorded[0]
	if r.Model != "openai/gpt-4.1" || r.Provider != "OpenAI" || r.Endpoint != "ep-1" || r.PromptTokens != 10 ||
		r.CompletionTokens != 20 || r.ReasoningTokens != 0 {
		t.Errorf("recorded %+v", r)
	}
	if r := store.recorded[1]; r.Model != "" || r.PromptTokens != 0 {
		t.Errorf("nulls recorded as %+v", r)
	}
	report := func(fields string) string {
		return `{"reports":[{"id":"a","key":"00000000000000aa","cost":1,` + fields + `}]}`
	}
	modelRule := "must be a model id (author/slug) of at most 200 characters"
	cases := map[string][2]string{
		report(`"model":"gpt-4"`):                                   {"reports[0].model", modelRule},
		report(`"model":"openai/` + strings.Repeat("x", 194) + `"`): {"reports[0].model", modelRule},
		report(`"model":5`):                                         {"reports[0].model", "must be a string"},
		report(`"provider_name":"Open\u0000AI"`):                    {"reports[0].provider_name", "must be at most 100 characters, without control characters"},
		report(`"endpoint_id":"` + strings.Repeat("e", 101) + `"`):  {"reports[0].endpoint_id", "must be at most 100 characters, without control characters"},
		report(`"prompt_tokens":-1`):                                {"reports[0].prompt_tokens", spend.TokensRule},
		report(`"completion_tokens":1.5`):                           {"reports[0].completion_tokens", spend.TokensRule},
		report(`"reasoning_tokens":"3"`):                            {"reports[0].reasoning_tokens", spend.TokensRule},
		report(`"prompt_tokens":1e3`):                               {"reports[0].prompt_tokens", spend.TokensRule},
		report(`"prompt_tokens":1000000000001`):                     {"reports[0].prompt_tokens", spend.TokensRule},
	}
	for body, want := range cases {
		_, err := reportBatch(svc, []byte(body))
		fields := invalid.Fields(err)
		if len(fields) != 1 || fields[0].Name != want[0] || fields[0].Problem != want[1] {
			t.Errorf("%.100s: %v, want %s: %s", body, err, want[0], want[1])
		}
	}
	// The longest model id and provider name pass.
	if _, err := reportBatch(svc, []byte(`{"reports":[{"id":"b","key":"00000000000000aa","cost":1,"model":"openai/`+strings.Repeat("x", 193)+`","provider_name":"`+strings.Repeat("é", 100)+`"}]}`)); err != nil {
		t.Errorf("the longest model and provider: %v", err)
	}
}

// conflictingSpend refuses every batch as a replay of a counted id with
// other content.
type conflictingSpend struct{ SpendService }

func (conflictingSpend) ReportBatch(context.Context, *keys.APIKey, func(*spend.BatchForm)) (spend.Result, error) {
	return spend.Result{}, &spend.ReplayConflictError{ID: "r-17", Index: 2}
}

// TestUsageReplayConflictIs409: a replayed id with other content is 409 in
// the error envelope, naming the id and its place in the batch.
func TestUsageReplayConflictIs409(t *testing.T) {
	auth := fakeAuth{"svc": {ID: "00000000000000d1", UserID: "u1", Role: keys.RoleService}}
	api, _ := newTestAPI(t, Options{Auth: auth, Spend: conflictingSpend{}})
	req := httptest.NewRequest("POST", apiPrefix+"/usage", strings.NewReader(`{"reports":[]}`))
	req.Header.Set("Authorization", "Bearer svc")
	req.Header.Set("Content-Type", "application/json")
	rec := serve(api.Handler(), req)
	env := decodeEnvelope(t, rec)
	if rec.Code != http.StatusConflict || env.Error.Code != http.StatusConflict || !strings.Contains(env.Error.Message, `"r-17"`) ||
		env.Error.Metadata["id"] != "r-17" || env.Error.Metadata["index"] != 2.0 {
		t.Errorf("a replay with other content: %d %+v", rec.Code, env)
	}
	if got := testutil.ToFloat64(api.spendMetrics.reports.WithLabelValues("refused")); got != 1 {
		t.Errorf("refused batches counted %v, want 1", got)
	}
}
