package gateway

import (
	"errors"
	"net/http"

	"github.com/aigateway/gateway/policy/keys"
	"github.com/aigateway/gateway/policy/spend"
	"go.uber.org/zap"
)

// refuseOverSpend answers 402 for a key over its limit or whose workspace
// is over a budget, from the guard's replica-local state: no round trip.
// It sits below requireKey.
func refuseOverSpend(guard SpendGuard, m *spendMetrics, log *zap.Logger) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		keyLimit, budget := m.refused.WithLabelValues("key_limit"), m.refused.WithLabelValues("workspace_budget")
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			k := callerOf(r)
			if k == nil {
				writeError(w, r, log, keys.ErrUnauthenticated)
				return
			}
			if err := guard.Decide(k); err != nil {
				if errors.Is(err, spend.ErrKeyLimit) {
					keyLimit.Inc()
				} else {
					budget.Inc()
				}
				writeError(w, r, log, err)
				return
			}
			next.ServeHTTP(w, r)
		})
	}
}
