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
	keys Authenticator
	// timed is keys when it can decide as of the request's start (asked
	// once, when the API is built), else nil.
	timed    timedAuthenticator
	failures *authFailureLimit // nil when rate limiting is off
	trusted  []netip.Prefix
}

func newAuthenticator(keys Authenticator, trusted []netip.Prefix) *authenticator {
	timed, _ := keys.(timedAuthenticator)
	return &authenticator{keys: keys, timed: timed, trusted: trusted}
}

// requireKey refuses a request without a valid key, and records the key
// in the request's state for everything below it (callerOf).
func requireKey(authn *authenticator, log *zap.Logger) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			st := stateOf(r.Context())
			k, err := authn.authenticate(r, st)
			if err != nil {
				writeError(w, r, log, err)
				return
			}
			// Outside observe there is no state to hold the key: the
			// handlers below then refuse the request (see keyed).
			if st != nil {
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
// failed more than RateLimits.AuthFailures allows, it is blocked for as
// long as the limit says, and its keys are checked by authenticateBlocked.
//
// st, when the request has one, carries when the request began, which a
// timedAuthenticator decides as of instead of reading the clock again.
func (a *authenticator) authenticate(r *http.Request, st *requestState) (*keys.APIKey, error) {
	if a.failures != nil && a.failures.any() {
		client := clientAddr(r, a.trusted).String()
		if blocked, wait := a.failures.blocked(client); blocked {
			return a.authenticateBlocked(r, client, wait)
		}
	}
	var k *keys.APIKey
	var err error
	if a.timed != nil && st != nil && !st.start.IsZero() {
		k, err = a.timed.AuthenticateAt(r.Context(), credentials(r), st.start)
	} else {
		k, err = a.keys.Authenticate(r.Context(), credentials(r))
	}
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

// timedAuthenticator is an Authenticator that can decide as of a time
// its caller has read (keys.Authenticator can).
type timedAuthenticator interface {
	AuthenticateAt(ctx context.Context, header string, now time.Time) (*keys.APIKey, error)
}

// cachedAuthenticator is an Authenticator that can also decide from what
// it has cached, without its store (keys.Authenticator does).
type cachedAuthenticator interface {
	AuthenticateCached(ctx context.Context, header string) (*keys.APIKey, error)
}

// authenticateBlocked checks a key sent from an address that has failed
// too often: a right key passes, a wrong one gets 429 for the rest of the
// block, and the address costs no more than an unblocked one would.
//
// The block is not there to stop guessing: a key is sk-gw- and a 64-bit id
// and a 256-bit secret, which no rate of tries will find. It bounds what
// wrong keys cost (store reads, the shared limiter's calls, log lines),
// and must not lock out everyone behind the same address (a NAT, an
// office) because one script there sends a wrong key. So:
//
//   - A key whose verdict the authentication cache holds is decided from it
//     at no cost: the keys in use from that address pass, and a wrong key
//     already seen (the script's, retried) is refused without a store
//     read or a limiter call. It is not charged again: the address is
//     already blocked, and charging would only cost a limiter call.
//   - A key the cache does not know needs a store read. A blocked address
//     gets one per emission interval of the failure limit (Per/Rate, 2 s by
//     default), the pace at which the limit lets any address fail once its
//     burst is spent; in between such keys get 429 with the time to the
//     next one. So a blocked address never costs more store reads than an
//     unblocked one would (an unblocked one may spend its whole burst at
//     once), a flood of made-up keys from it costs at most that one read
//     per interval, and a right key not yet cached gets through within an
//     interval.
//
// Remembering refused keys apart from the cache was the other way: it
// would spare the reads of wrong keys retried, which the cache spares
// already, but not those of new keys, each of which would cost a read.
func (a *authenticator) authenticateBlocked(r *http.Request, client string, wait time.Duration) (*keys.APIKey, error) {
	creds := credentials(r)
	err := keys.ErrNotCached
	if cached, ok := a.keys.(cachedAuthenticator); ok {
		var k *keys.APIKey
		if k, err = cached.AuthenticateCached(r.Context(), creds); err == nil {
			return k, nil
		}
	}
	if errors.Is(err, keys.ErrNotCached) {
		var refused error
		if wait, refused = a.failures.probe(client); refused != nil {
			return nil, refused
		}
		var k *keys.APIKey
		if k, err = a.keys.Authenticate(r.Context(), creds); err == nil {
			return k, nil
		}
	}
	switch {
	case errors.Is(err, keys.ErrUnauthenticated):
		return nil, err // no key at all: not a wrong one
	case err != nil && !errors.Is(err, keys.ErrInvalidKey) && !errors.Is(err, keys.ErrNotCached):
		return nil, authError(err)
	}
	return nil, authBlocked(wait)
}

// credentials returns the caller's key as an Authorization header value:
// that header itself or, when it is absent (or empty), the X-Api-Key header
// as a bearer token, which is how the Anthropic SDKs send a key. Both go
// through the one Authenticator: the same checks, the same constant-time
// comparison, the same 401s. Authorization wins when both are sent, so a
// second header can never turn a refused key into an accepted one.
//
// The header used must come once. Two Authorization headers (or two
// X-Api-Key) are a malformed credential, the 401 of any malformed key:
// read first or last, they could name one caller here and another to a
// proxy in front that reads the other one.
func credentials(r *http.Request) string {
	if v := r.Header["Authorization"]; len(v) > 0 && v[0] != "" {
		return sole(v, "")
	}
	if v := r.Header["X-Api-Key"]; len(v) > 0 && v[0] != "" {
		return sole(v, "Bearer ")
	}
	return ""
}

// sole is prefix and the one value of a credential header, or
// ambiguousCredentials when the header came more than once.
func sole(values []string, prefix string) string {
	if len(values) > 1 {
		return ambiguousCredentials
	}
	return prefix + values[0]
}

// ambiguousCredentials stands for a credential header sent more than once:
// not a bearer token, so the authenticator finds it malformed.
const ambiguousCredentials = "ambiguous"

// headerValue is h.Get(name) for a name in canonical form: the server
// stores received headers under canonical names, so the lookup needs no
// canonicalisation of name on every request.
func headerValue(h http.Header, name string) string {
	if v := h[name]; len(v) > 0 {
		return v[0]
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
// when, so a blocked address costs no limiter call, and when each may next
// have a key read from the store (see authenticateBlocked).
type authFailureLimit struct {
	limiter limits.Limiter
	limit   limits.Limit
	now     func() time.Time

	mu    sync.Mutex
	until map[string]block
}

// block is a blocked address's state.
type block struct {
	until time.Time
	// nextRead is when the address may next have a key the cache does not
	// know read from the store; zero at the start of a block.
	nextRead time.Time
}

// maxBlockedAddrs bounds the memory of blocked addresses; past it, expired
// entries are dropped and, if none expired, new blocks rely on the shared
// limiter alone (which still refuses each further failure).
const maxBlockedAddrs = 100_000

func newAuthFailureLimit(l limits.Limiter, limit limits.Limit) *authFailureLimit {
	return &authFailureLimit{limiter: l, limit: limit, now: time.Now, until: map[string]block{}}
}

// any reports whether some address is blocked (or was, and has not been
// looked at since): when none is, a request need not format its address.
func (f *authFailureLimit) any() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.until) > 0
}

// blocked reports whether client is blocked now, and for how long still.
func (f *authFailureLimit) blocked(client string) (bool, time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	b, ok := f.until[client]
	if !ok {
		return false, 0
	}
	now := f.now()
	if !now.Before(b.until) {
		delete(f.until, client)
		return false, 0
	}
	return true, b.until.Sub(now)
}

// probe takes the blocked client's store read of this interval: nil when
// it may have one now (the next one is then an interval away), else the
// 429 telling when the next one comes (or the block ends, if sooner).
func (f *authFailureLimit) probe(client string) (time.Duration, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	now := f.now()
	b, ok := f.until[client]
	if !ok || !now.Before(b.until) {
		return 0, nil // the block ended meanwhile
	}
	if now.Before(b.nextRead) {
		wait := b.nextChance(now)
		return wait, authBlocked(wait)
	}
	b.nextRead = now.Add(time.Duration(f.limit.Interval()))
	f.until[client] = b
	return b.nextChance(now), nil
}

// nextChance is how long from now until a key sent from the blocked
// address may be read from the store again: the next read, or the end of
// the block if that comes first.
func (b block) nextChance(now time.Time) time.Duration {
	if b.nextRead.Before(b.until) {
		return b.nextRead.Sub(now)
	}
	return b.until.Sub(now)
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
		for addr, b := range f.until {
			if !now.Before(b.until) {
				delete(f.until, addr)
			}
		}
	}
	if len(f.until) < maxBlockedAddrs {
		f.until[client] = block{until: f.now().Add(d.RetryAfter)}
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
