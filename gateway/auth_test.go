package gateway

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/aigateway/gateway/policy/keys"
	"github.com/aigateway/gateway/policy/limits"
	"github.com/go-chi/chi/v5"
)

// TestUnroutedNeedsAKeyFirst: neither an unknown path nor a wrong method on
// a known one tells an anonymous caller that the route exists.
func TestUnroutedNeedsAKeyFirst(t *testing.T) {
	api, _ := newTestAPI(t, Options{})
	h := api.Handler()
	for _, tc := range []struct {
		method, path, token string
		want                int
	}{
		{"DELETE", "/api/v1/models", "", http.StatusUnauthorized},
		{"PUT", "/api/v1/files", "", http.StatusUnauthorized},
		{"GET", "/api/v1/nothing", "", http.StatusUnauthorized},
		{"DELETE", "/api/v1/models", "wrong", http.StatusUnauthorized},
		{"DELETE", "/api/v1/models", "standard", http.StatusMethodNotAllowed},
		{"GET", "/api/v1/nothing", "standard", http.StatusNotFound},
		{"POST", "/healthz", "", http.StatusMethodNotAllowed}, // outside the API: nothing to hide
	} {
		rec := do(t, h, tc.method, tc.path, tc.token, nil)
		if rec.Code != tc.want {
			t.Errorf("%s %s with %q = %d, want %d", tc.method, tc.path, tc.token, rec.Code, tc.want)
		}
		if rec.Code == http.StatusUnauthorized && rec.Header().Get("WWW-Authenticate") == "" {
			t.Errorf("%s %s: a 401 without WWW-Authenticate", tc.method, tc.path)
		}
	}
}

// TestWrongMethodNamesAllowed: a 405 carries Allow with the methods of its
// path (RFC 9110 §15.5.6), and an anonymous caller, refused first, learns
// none of them.
func TestWrongMethodNamesAllowed(t *testing.T) {
	api, _ := newTestAPI(t, Options{})
	h := api.Handler()
	for _, tc := range []struct {
		method, path, token string
		want                int
		allow               string
	}{
		{"PUT", "/api/v1/model/openai/gpt-4o", "standard", http.StatusMethodNotAllowed, "GET"},
		{"PUT", "/api/v1/files", "standard", http.StatusMethodNotAllowed, "GET, POST"},
		{"POST", "/api/v1/files/file-abc", "standard", http.StatusMethodNotAllowed, "GET, DELETE"},
		{"PUT", "/api/v1/workspaces/ws-1", "management", http.StatusMethodNotAllowed, "GET, PATCH, DELETE"},
		{"POST", "/healthz", "", http.StatusMethodNotAllowed, "GET"},
		{"PUT", "/api/v1/files", "", http.StatusUnauthorized, ""},
	} {
		rec := do(t, h, tc.method, tc.path, tc.token, nil)
		if rec.Code != tc.want || rec.Header().Get("Allow") != tc.allow {
			t.Errorf("%s %s = %d with Allow %q, want %d with %q", tc.method, tc.path, rec.Code, rec.Header().Get("Allow"), tc.want, tc.allow)
		}
	}
	// Allow is built from routeMethods: a route of another method would be
	// left out of it.
	err := chi.Walk(api.router(), func(method, route string, _ http.Handler, _ ...func(http.Handler) http.Handler) error {
		if route != "/metrics" && !slices.Contains(routeMethods, method) {
			t.Errorf("%s %s: a method routeMethods does not list", method, route)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// cachingAuth is an Authenticator with a cache in front of its store, as
// keys.Authenticator has: it counts the store's reads, and the cache holds
// the verdict on each token read before.
type cachingAuth struct {
	store fakeAuth
	mu    sync.Mutex
	seen  map[string]bool
	reads int
}

func (c *cachingAuth) Authenticate(ctx context.Context, header string) (*keys.APIKey, error) {
	if k, err := c.AuthenticateCached(ctx, header); !errors.Is(err, keys.ErrNotCached) {
		return k, err
	}
	c.mu.Lock()
	c.reads++
	c.seen[header] = true
	c.mu.Unlock()
	return c.store.Authenticate(ctx, header)
}

func (c *cachingAuth) AuthenticateCached(ctx context.Context, header string) (*keys.APIKey, error) {
	c.mu.Lock()
	seen := c.seen[header]
	c.mu.Unlock()
	if header == "" || seen {
		return c.store.Authenticate(ctx, header)
	}
	return nil, keys.ErrNotCached
}

func (c *cachingAuth) storeReads() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.reads
}

// TestFailedAuthenticationsAreLimitedPerAddress: past the limit, an address
// gets 429 with Retry-After for its wrong keys, costing no store read for a
// key already seen and at most one per interval of the limit for new ones;
// a right key still passes from it (the cached ones at once, one not yet
// cached at the next read), so one wrong script behind a NAT locks nobody
// else there out; another address is unaffected.
func TestFailedAuthenticationsAreLimitedPerAddress(t *testing.T) {
	clock := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	now := func() time.Time { return clock }
	limiter := &countingLimiter{Limiter: limits.NewLocalLimiter(limits.LocalOptions{Now: now})}
	auth := &cachingAuth{store: fakeAuth{"standard": standardKey, "management": managementKey}, seen: map[string]bool{}}
	api, _ := newTestAPI(t, Options{Auth: auth, Limits: &RateLimits{
		Limiter:      limiter,
		Default:      limits.Limit{Rate: 1000, Per: time.Minute, Burst: 1000},
		AuthFailures: limits.Limit{Rate: 3, Per: time.Minute, Burst: 3}, // an interval of 20 s
	}})
	api.authn.failures.now = now
	h := api.Handler()
	from := func(addr, token string) (int, string) {
		t.Helper()
		req := httptest.NewRequest("GET", "/api/v1/nothing", nil) // 404 once authenticated
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		req.RemoteAddr = addr + ":1234"
		rec := serve(h, req)
		if rec.Code == http.StatusTooManyRequests {
			if s, err := strconv.Atoi(rec.Header().Get("Retry-After")); err != nil || s < 1 {
				t.Errorf("429 with Retry-After %q", rec.Header().Get("Retry-After"))
			}
		}
		return rec.Code, rec.Header().Get("Retry-After")
	}
	const nat = "192.0.2.1"
	if got, _ := from(nat, "standard"); got != http.StatusNotFound {
		t.Fatalf("a right key = %d, want 404 (authenticated)", got)
	}
	for i := range 3 {
		if got, _ := from(nat, "guess"); got != http.StatusUnauthorized {
			t.Fatalf("failure %d = %d, want 401", i+1, got)
		}
	}
	if got, _ := from(nat, "guess"); got != http.StatusTooManyRequests {
		t.Fatalf("failure past the limit = %d, want 429", got)
	}

	// Blocked: the wrong script's key, retried, costs nothing at all.
	reads, calls := auth.storeReads(), limiter.count()
	for range 50 {
		if got, _ := from(nat, "guess"); got != http.StatusTooManyRequests {
			t.Fatalf("a blocked address's wrong key = %d, want 429", got)
		}
	}
	if auth.storeReads() != reads || limiter.count() != calls {
		t.Errorf("50 refusals of a known wrong key cost %d store reads and %d limiter calls, want none",
			auth.storeReads()-reads, limiter.count()-calls)
	}
	// A right key in use there passes.
	if got, _ := from(nat, "standard"); got != http.StatusNotFound {
		t.Errorf("a blocked address with a right key in use = %d, want 404 (authenticated)", got)
	}
	// A right key not yet seen takes the interval's store read and passes.
	if got, _ := from(nat, "management"); got != http.StatusNotFound {
		t.Errorf("a blocked address with a right key not yet cached = %d, want 404", got)
	}
	// New wrong keys: none more read in this interval, and Retry-After
	// says when the next read comes.
	reads = auth.storeReads()
	for i := range 20 {
		got, retry := from(nat, "made-up-"+strconv.Itoa(i))
		if got != http.StatusTooManyRequests || retry != "20" {
			t.Fatalf("a new wrong key from a blocked address = %d (Retry-After %s), want 429 (20)", got, retry)
		}
	}
	if auth.storeReads() != reads {
		t.Errorf("new wrong keys within the interval read the store %d times, want 0", auth.storeReads()-reads)
	}
	clock = clock.Add(10 * time.Second)
	if got, retry := from(nat, "made-up-x"); got != http.StatusTooManyRequests || retry != "10" {
		t.Errorf("half an interval on = %d (Retry-After %s), want 429 (10)", got, retry)
	}
	// The block ends an interval after it began; then the address is
	// like any other: its next failure is counted, and blocks it again.
	clock = clock.Add(10 * time.Second)
	if got, _ := from(nat, "guess"); got != http.StatusUnauthorized {
		t.Errorf("a wrong key once the block ended = %d, want 401", got)
	}
	if got, _ := from(nat, "guess"); got != http.StatusTooManyRequests {
		t.Errorf("the failure after = %d, want 429", got)
	}
	if got, _ := from(nat, "management"); got != http.StatusNotFound {
		t.Errorf("a right key while blocked again = %d, want 404", got)
	}

	if got, _ := from("192.0.2.2", "standard"); got != http.StatusNotFound {
		t.Errorf("another address with a right key = %d, want 404 (authenticated)", got)
	}
	if got, _ := from("192.0.2.2", ""); got != http.StatusUnauthorized {
		t.Errorf("a missing key = %d, want 401 (not counted as a guess)", got)
	}
	if got, _ := from(nat, ""); got != http.StatusUnauthorized {
		t.Errorf("a missing key from a blocked address = %d, want 401 (no key is not a wrong key)", got)
	}
}

// countingLimiter counts the calls of its limiter.
type countingLimiter struct {
	limits.Limiter
	mu    sync.Mutex
	calls int
}

func (c *countingLimiter) Allow(ctx context.Context, key string, l limits.Limit, cost int64) (limits.Decision, error) {
	c.mu.Lock()
	c.calls++
	c.mu.Unlock()
	return c.Limiter.Allow(ctx, key, l, cost)
}

func (c *countingLimiter) count() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.calls
}
