package gateway

import (
	"errors"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/aigateway/gateway/policy/keys"
	"github.com/aigateway/gateway/policy/limits"
	"go.uber.org/zap"
)

// RateLimits are the request limits of the API. The limiter decides; a
// failover limiter never returns an error for Redis trouble (it falls back to
// local limits), so an error here is a programming or configuration error.
type RateLimits struct {
	Limiter limits.Limiter
	Default limits.Limit
	Files   limits.Limit
	// Usage limits usage reports (POST /usage, POST /keys/{hash}/usage).
	Usage limits.Limit
	// AuthFailures limits failed authentications per client address; a
	// zero Rate turns that off.
	AuthFailures limits.Limit
}

// limit is the configured limit of a request class.
func (l *RateLimits) limit(c limits.Class) limits.Limit {
	switch c {
	case limits.ClassFiles:
		return l.Files
	case limits.ClassUsage:
		return l.Usage
	}
	return l.Default
}

// limitRate limits every request of the class per API key. The key's id is
// the identity: it is authenticated, unlike any address or header a client
// could rotate. Uploads are additionally limited per workspace by the upload
// admission, once the workspace is known; a denial there answers with the
// headers of the limit that denied (see writeError), not these.
func limitRate(l *RateLimits, class limits.Class, log *zap.Logger) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		if l == nil || l.Limiter == nil {
			return next
		}
		limit := l.limit(class)
		limiterKeys := &requestKeys{class: class}
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			k := callerOf(r)
			if k == nil { // unreachable below requireKey; refuse rather than skip
				writeError(w, r, log, keys.ErrUnauthenticated)
				return
			}
			d, err := l.Limiter.Allow(r.Context(), limiterKeys.of(k.ID), limit, 1)
			if err != nil {
				writeError(w, r, log, err)
				return
			}
			if !d.Allowed {
				writeError(w, r, log, limits.Denied(d, limits.LimitRequests))
				return
			}
			setRateLimitHeadersIn(w.Header(), d, stateOf(r.Context()))
			next.ServeHTTP(w, r)
		})
	}
}

// requestKeys are the limiter keys of one class by API key id, made once
// per key instead of on every request. The ids are those of authenticated
// keys, so the map grows with the key store, not with what clients send;
// it stops growing at maxRequestKeys all the same, the keys past it made
// per request as before.
type requestKeys struct {
	class limits.Class
	mu    sync.RWMutex
	m     map[string]string
}

const maxRequestKeys = 1 << 16

func (c *requestKeys) of(keyID string) string {
	c.mu.RLock()
	k, ok := c.m[keyID]
	c.mu.RUnlock()
	if ok {
		return k
	}
	k = limits.RequestsKey(c.class, keyID)
	c.mu.Lock()
	if len(c.m) < maxRequestKeys {
		if c.m == nil {
			c.m = make(map[string]string)
		}
		c.m[keyID] = k
	}
	c.mu.Unlock()
	return k
}

// Header names of the rate-limit fields (IETF draft RateLimit header
// fields) and Retry-After.
const (
	hdrLimit      = "RateLimit-Limit"
	hdrRemaining  = "RateLimit-Remaining"
	hdrReset      = "RateLimit-Reset"
	hdrRetryAfter = "Retry-After"
)

// setRateLimitHeaders writes the rate-limit headers of d into h:
// RateLimit-Limit, RateLimit-Remaining and RateLimit-Reset (seconds until
// the bucket is full, rounded up) on every decision, and Retry-After (whole
// seconds, rounded up, at least 1) only when the request was denied.
func setRateLimitHeaders(h http.Header, d limits.Decision) { setRateLimitHeadersIn(h, d, nil) }

// setRateLimitHeadersIn is setRateLimitHeaders for a request with state
// st (or nil). Set on every allowed request, so built with no allocation
// the first time in a request (in st) and two after or without a state,
// instead of eight: the three numbers in one string, the three values in
// one array (each capped, so an Add elsewhere cannot write over its
// neighbour), under keys already in canonical form.
func setRateLimitHeadersIn(h http.Header, d limits.Decision, st *requestState) {
	var s string
	var v []string
	var i, j int
	if st != nil && !st.rateLimitUsed {
		// Written once: a later decision in the same request must not
		// change strings already handed out.
		st.rateLimitUsed = true
		var b []byte
		b, i, j = appendRateLimit(st.rateLimitBytes[:0], d)
		s, v = frozenString(b), st.rateLimitValues[:]
	} else {
		var buf [3 * 20]byte
		var b []byte
		b, i, j = appendRateLimit(buf[:0], d)
		s, v = string(b), make([]string, 3)
	}
	v[0], v[1], v[2] = s[:i], s[i:j], s[j:]
	h[canonLimit], h[canonRemaining], h[canonReset] = v[0:1:1], v[1:2:2], v[2:3:3]
	if d.Allowed {
		delete(h, hdrRetryAfter) // canonical already: Del would canonicalise it again
		return
	}
	h.Set(hdrRetryAfter, strconv.FormatInt(max(ceilSeconds(d.RetryAfter), 1), 10))
}

// appendRateLimit appends the three numbers of d's RateLimit-* headers to
// b, and says where the second and the third begin.
func appendRateLimit(b []byte, d limits.Decision) (_ []byte, i, j int) {
	b = strconv.AppendInt(b, int64(d.Limit), 10)
	i = len(b)
	b = strconv.AppendInt(b, int64(d.Remaining), 10)
	j = len(b)
	return strconv.AppendInt(b, ceilSeconds(d.ResetAfter), 10), i, j
}

// The canonical forms of the RateLimit-* names, as net/http keys them.
var (
	canonLimit     = http.CanonicalHeaderKey(hdrLimit)
	canonRemaining = http.CanonicalHeaderKey(hdrRemaining)
	canonReset     = http.CanonicalHeaderKey(hdrReset)
)

// setRetryHeaders tells the client of a 429 or 503 when to try again. A
// denial by one of the gateway's limits carries that limit's decision, and
// the answer describes that limit alone: an upload refused by its
// workspace's byte budget must not show the per-key request limit, set by
// rateLimit when it let the request in, with capacity left. Any other 429
// has no limit of ours to describe, so those headers go.
func setRetryHeaders(h http.Header, status int, err error) {
	var limited *limits.LimitedError
	if status == http.StatusTooManyRequests && errors.As(err, &limited) {
		setRateLimitHeaders(h, limited.Decision)
		return
	}
	if status == http.StatusTooManyRequests {
		clearRateLimitHeaders(h)
	}
	var ra retryAfterError
	switch {
	case errors.As(err, &ra) && ra.RetryAfterSeconds() > 0:
		h.Set(hdrRetryAfter, strconv.Itoa(ra.RetryAfterSeconds()))
	case status == http.StatusTooManyRequests || status == http.StatusServiceUnavailable:
		h.Set(hdrRetryAfter, "1")
	}
}

// clearRateLimitHeaders removes the RateLimit-* headers a limit that
// allowed the request set earlier, for an answer they do not describe.
func clearRateLimitHeaders(h http.Header) {
	h.Del(hdrLimit)
	h.Del(hdrRemaining)
	h.Del(hdrReset)
}

func ceilSeconds(d time.Duration) int64 {
	if d <= 0 {
		return 0
	}
	return int64((d + time.Second - 1) / time.Second)
}
