package gateway

import (
	"net/http"
	"testing"

	"github.com/aigateway/gateway/policy/keys"
	"github.com/aigateway/gateway/policy/spend"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

type guardFunc func(*keys.APIKey) error

func (f guardFunc) Decide(k *keys.APIKey) error { return f(k) }

func TestRefuseOverSpend(t *testing.T) {
	api, _ := newTestAPI(t, Options{})
	m := newSpendMetrics(prometheus.NewRegistry())
	ok := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusNoContent) })
	guard := guardFunc(func(k *keys.APIKey) error {
		switch k {
		case standardKey:
			return spend.ErrKeyLimit
		case managementKey:
			return spend.ErrBudget
		}
		return nil
	})
	chain := func(g SpendGuard) http.Handler {
		return observe(api.observation)(requireKey(api.authn, api.log)(refuseOverSpend(g, m, api.log)(ok)))
	}
	if rec := do(t, chain(guard), "GET", "/api/v1/models", "standard", nil); rec.Code != http.StatusPaymentRequired {
		t.Errorf("key over its limit: status = %d, want 402", rec.Code)
	}
	if rec := do(t, chain(guard), "GET", "/api/v1/models", "management", nil); rec.Code != http.StatusPaymentRequired {
		t.Errorf("workspace over budget: status = %d, want 402", rec.Code)
	}
	if got := testutil.ToFloat64(m.refused.WithLabelValues("key_limit")); got != 1 {
		t.Errorf("key_limit refusals = %v, want 1", got)
	}
	if got := testutil.ToFloat64(m.refused.WithLabelValues("workspace_budget")); got != 1 {
		t.Errorf("workspace_budget refusals = %v, want 1", got)
	}
	// A key the guard allows passes.
	if rec := do(t, chain(spendAllowed{}), "GET", "/api/v1/models", "standard", nil); rec.Code != http.StatusNoContent {
		t.Errorf("an allowed key: status = %d, want 204", rec.Code)
	}
	// Below no requireKey there is no caller to judge: 401, not a pass.
	h := observe(api.observation)(refuseOverSpend(guard, m, api.log)(ok))
	if rec := do(t, h, "GET", "/api/v1/models", "standard", nil); rec.Code != http.StatusUnauthorized {
		t.Errorf("without requireKey: status = %d, want 401", rec.Code)
	}
}
