package gateway

import (
	"errors"
	"net/http"
	"time"

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

// errRateLimited is the 429 of every limit.
var errRateLimited = errors.New("rate limit exceeded")

// limitedError carries the decision so the 429 has its Retry-After.
type limitedError struct {
	d policy.Decision
}

func (e *limitedError) Error() string { return "rate limit exceeded" }
func (e *limitedError) Unwrap() error { return errRateLimited }
func (e *limitedError) RetryAfterSeconds() int {
	s := int((e.d.RetryAfter + time.Second - 1) / time.Second)
	return max(s, 1)
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
				writeError(w, r, a.log, &limitedError{d: d})
				return
			}
			next.ServeHTTP(w, r)
		})
	}
}
