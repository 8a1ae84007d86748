package gateway

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/aigateway/gateway/keys"
	"github.com/aigateway/gateway/spend"
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

func (fakeBudgets) PutBudget(_ context.Context, ws string, iv spend.Interval, _ []byte) (spend.Budget, bool, bool, error) {
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
		rec := serve(h, req)
		if rec.Code != want {
			t.Errorf("%s: %d %s, want %d", ua, rec.Code, rec.Body, want)
		}
	}
	if rec := do(t, h, "PUT", apiPrefix+"/workspaces/w1/budgets/yearly", "management", strings.NewReader(`{"limit_usd":1}`)); rec.Code != http.StatusBadRequest {
		t.Errorf("unknown interval: %d", rec.Code)
	}
}
