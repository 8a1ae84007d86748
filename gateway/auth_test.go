package gateway

import (
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"testing"
	"time"

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

// TestFailedAuthenticationsAreLimitedPerAddress: past the limit, an address
// gets 429 with Retry-After before its key is even looked at (a right key
// included, so guessing learns nothing); another address is unaffected.
func TestFailedAuthenticationsAreLimitedPerAddress(t *testing.T) {
	limiter := limits.NewLocalLimiter(limits.LocalOptions{})
	api, _ := newTestAPI(t, Options{Limits: &RateLimits{
		Limiter:      limiter,
		Default:      limits.Limit{Rate: 1000, Per: time.Minute, Burst: 1000},
		AuthFailures: limits.Limit{Rate: 3, Per: time.Minute, Burst: 3},
	}})
	h := api.Handler()
	from := func(addr, token string) int {
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
		return rec.Code
	}
	for i := range 3 {
		if got := from("192.0.2.1", "guess"); got != http.StatusUnauthorized {
			t.Fatalf("failure %d = %d, want 401", i+1, got)
		}
	}
	if got := from("192.0.2.1", "guess"); got != http.StatusTooManyRequests {
		t.Fatalf("failure past the limit = %d, want 429", got)
	}
	if got := from("192.0.2.1", "standard"); got != http.StatusTooManyRequests {
		t.Errorf("a blocked address with a right key = %d, want 429 (no answer that tells right from wrong)", got)
	}
	if got := from("192.0.2.2", "standard"); got != http.StatusNotFound {
		t.Errorf("another address with a right key = %d, want 404 (authenticated)", got)
	}
	if got := from("192.0.2.2", ""); got != http.StatusUnauthorized {
		t.Errorf("a missing key = %d, want 401 (not counted as a guess)", got)
	}
}
