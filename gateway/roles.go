package gateway

import (
	"net/http"

	"github.com/aigateway/gateway/policy/keys"
	"go.uber.org/zap"
)

// requireManagement refuses every key but a management key with the
// spec's 403. It sits below requireKey.
func requireManagement(log *zap.Logger) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			k := callerOf(r)
			if k == nil {
				writeError(w, r, log, keys.ErrUnauthenticated)
				return
			}
			if k.Role != keys.RoleManagement {
				writeError(w, r, log, keys.ErrForbidden)
				return
			}
			next.ServeHTTP(w, r)
		})
	}
}
