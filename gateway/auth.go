package gateway

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/netip"
	"sync"
	"time"

	"github.com/aigateway/gateway/policy/keys"
	"github.com/aigateway/gateway/policy/limits"
	"go.uber.org/zap"
)

// authenticator checks callers' keys, and limits the failures of each
// client address.
type authenticator struct {
	keys     Authenticator
	failures *authFailureLimit // nil when rate limiting is off
	trusted  []netip.Prefix
}

// requireKey refuses a request without a valid key, and records the key
// in the request's state for everything below it (callerOf).
func requireKey(authn *authenticator, log *zap.Logger) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			k, err := authn.authenticate(r)
			if err != nil {
				writeError(w, r, log, err)
				return
			}
			// Outside observe there is no state to hold the key: the
			// handlers below then refuse the request (see keyed).
			if st := stateOf(r.Context()); st != nil {
				st.key = k
			}
			next.ServeHTTP(w, r)
		})
	}
}

// authenticate checks the caller's key. It is the one place a request
// is authenticated: the routes, and the unknown paths and methods under
// /api/v1, which must not reveal the API's shape to anonymous callers.
//
// Failed attempts are limited per client address: once an address has
// failed more than RateLimits.AuthFailures allows, its requests are refused
// with 429 before any key is looked at, for as long as the limit says, so a
// key cannot be guessed faster than that from one address.
func (a *authenticator) authenticate(r *http.Request) (*keys.APIKey, error) {
	if a.failures != nil && a.failures.any() {
		if err := a.failures.blocked(clientAddr(r, a.trusted).String()); err != nil {
			return nil, err
		}
	}
	k, err := a.keys.Authenticate(r.Context(), credentials(r))
	if err == nil {
		return k, nil
	}
	if errors.Is(err, keys.ErrInvalidKey) && a.failures != nil {
		if denied := a.failures.charge(r.Context(), clientAddr(r, a.trusted).String()); denied != nil {
			return nil, denied
		}
	}
	return nil, authError(err)
}

// credentials returns the caller's key as an Authorization header value:
// that header itself or, when it is absent (or empty), the X-Api-Key header
// as a bearer token, which is how the Anthropic SDKs send a key. Both go
// through the one Authenticator: the same checks, the same constant-time
// comparison, the same 401s. Authorization wins when both are sent, so a
// second header can never turn a refused key into an accepted one.
func credentials(r *http.Request) string {
	if h := r.Header.Get("Authorization"); h != "" {
		return h
	}
	if k := r.Header.Get("X-Api-Key"); k != "" {
		return "Bearer " + k
	}
	return ""
}

// authError keeps the authenticator's verdicts and turns a key store that
// could not decide into a 503: try again, not "bad key".
func authError(err error) error {
	if errors.Is(err, keys.ErrUnauthenticated) || errors.Is(err, keys.ErrInvalidKey) {
		return err
	}
	return fmt.Errorf("%w: authenticate: %w", errUnavailable, err)
}

// authFailureLimit counts failed authentications per client address in the
// shared limiter, and remembers locally which addresses are blocked until
// when, so a blocked address costs no limiter call and no key lookup.
type authFailureLimit struct {
	limiter limits.Limiter
	limit   limits.Limit
	now     func() time.Time

	mu    sync.Mutex
	until map[string]time.Time
}

// maxBlockedAddrs bounds the memory of blocked addresses; past it, expired
// entries are dropped and, if none expired, new blocks rely on the shared
// limiter alone (which still refuses each further failure).
const maxBlockedAddrs = 100_000

func newAuthFailureLimit(l limits.Limiter, limit limits.Limit) *authFailureLimit {
	return &authFailureLimit{limiter: l, limit: limit, now: time.Now, until: map[string]time.Time{}}
}

// any reports whether some address is blocked (or was, and has not been
// looked at since): when none is, a request need not format its address.
func (f *authFailureLimit) any() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.until) > 0
}

// blocked returns the 429 of an address that is blocked now, else nil.
func (f *authFailureLimit) blocked(client string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	until, ok := f.until[client]
	if !ok {
		return nil
	}
	now := f.now()
	if !now.Before(until) {
		delete(f.until, client)
		return nil
	}
	return authBlocked(until.Sub(now))
}

// charge counts one failure of client; when the limit denies it, the
// address is blocked until the limit allows again, and the 429 is returned.
// A limiter that cannot decide lets the failure be answered as a 401.
func (f *authFailureLimit) charge(ctx context.Context, client string) error {
	d, err := f.limiter.Allow(ctx, limits.AuthFailuresKey(client), f.limit, 1)
	if err != nil || d.Allowed {
		return nil
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.until) >= maxBlockedAddrs {
		now := f.now()
		for addr, until := range f.until {
			if !now.Before(until) {
				delete(f.until, addr)
			}
		}
	}
	if len(f.until) < maxBlockedAddrs {
		f.until[client] = f.now().Add(d.RetryAfter)
	}
	return authBlocked(d.RetryAfter)
}

// authBlocked is the 429 of a blocked address, telling when to try again.
func authBlocked(wait time.Duration) error {
	return &authBlockedError{seconds: max(1, int((wait+time.Second-1)/time.Second))}
}

type authBlockedError struct{ seconds int }

func (e *authBlockedError) Error() string {
	return fmt.Sprintf("too many failed authentications from this address; retry in %ds", e.seconds)
}
func (e *authBlockedError) Unwrap() error          { return limits.ErrRateLimited }
func (e *authBlockedError) RetryAfterSeconds() int { return e.seconds }
