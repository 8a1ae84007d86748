package gateway

import (
	"net/http"

	"github.com/aigateway/gateway/policy"
)

// routeClass picks which configured rate a route is limited by.
type routeClass uint8

const (
	classDefault routeClass = iota
	classFiles
)

// RateLimits are the request limits of the API. The limiter decides; a
// failover limiter never returns an error for Redis trouble (it falls back to
// local limits), so an error here is a programming or configuration error.
type RateLimits struct {
	Limiter policy.Limiter
	Default policy.Limit
	Files   policy.Limit
}

// rateLimit limits every request of the class per API key. The key's id is
// the identity: it is authenticated, unlike any address or header a client
// could rotate. Uploads are additionally limited per workspace by the upload
// handler, once it knows the workspace.
func (a *API) rateLimit(class routeClass) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		if a.limits == nil || a.limits.Limiter == nil {
			return next
		}
		limit, prefix := a.limits.Default, "default:key:"
		if class == classFiles {
			limit, prefix = a.limits.Files, "files:key:"
		}
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			k := keyFrom(r.Context())
			if k == nil { // unreachable behind authenticate; refuse rather than skip
				writeError(w, r, a.log, policy.ErrUnauthenticated)
				return
			}
			d, err := a.limits.Limiter.Allow(r.Context(), prefix+k.ID, limit, 1)
			if err != nil {
				writeError(w, r, a.log, err)
				return
			}
			d.SetHeaders(w.Header())
			if !d.Allowed {
				writeError(w, r, a.log, policy.Denied(d, "rate"))
				return
			}
			next.ServeHTTP(w, r)
		})
	}
}
