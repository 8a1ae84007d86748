package gateway

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aigateway/gateway/policy/limits"
)

func TestSetRateLimitHeaders(t *testing.T) {
	tests := []struct {
		name string
		d    limits.Decision
		want map[string]string // "" means absent
	}{
		{
			name: "allowed",
			d:    limits.Decision{Allowed: true, Limit: 100, Remaining: 42, ResetAfter: 1500 * time.Millisecond},
			want: map[string]string{"RateLimit-Limit": "100", "RateLimit-Remaining": "42", "RateLimit-Reset": "2", "Retry-After": ""},
		},
		{
			name: "allowed full bucket",
			d:    limits.Decision{Allowed: true, Limit: 5, Remaining: 5},
			want: map[string]string{"RateLimit-Limit": "5", "RateLimit-Remaining": "5", "RateLimit-Reset": "0", "Retry-After": ""},
		},
		{
			name: "denied rounds retry up",
			d:    limits.Decision{Limit: 20, RetryAfter: 2001 * time.Millisecond, ResetAfter: 60 * time.Second},
			want: map[string]string{"RateLimit-Limit": "20", "RateLimit-Remaining": "0", "RateLimit-Reset": "60", "Retry-After": "3"},
		},
		{
			name: "denied with a sub-second wait still says one second",
			d:    limits.Decision{Limit: 20, RetryAfter: time.Millisecond, ResetAfter: time.Millisecond},
			want: map[string]string{"RateLimit-Reset": "1", "Retry-After": "1"},
		},
		{
			name: "denied exact seconds",
			d:    limits.Decision{Limit: 1, RetryAfter: 30 * time.Second, ResetAfter: 30 * time.Second},
			want: map[string]string{"RateLimit-Reset": "30", "Retry-After": "30"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := http.Header{}
			h.Set("Retry-After", "stale")
			setRateLimitHeaders(h, tc.d)
			for k, want := range tc.want {
				if got := h.Get(k); got != want {
					t.Errorf("%s = %q, want %q", k, got, want)
				}
			}
		})
	}
}

// TestDenialHeadersDescribeTheDenyingLimit: every 429 carries the headers
// of the limit that denied it, never those of the per-key request limit
// that let the request in with capacity left. The denials come from the
// handler behind the files class's rate limit, as the upload admission's
// do through the file service.
func TestDenialHeadersDescribeTheDenyingLimit(t *testing.T) {
	rates := &RateLimits{
		Limiter: limits.NewLocalLimiter(limits.LocalOptions{}),
		Default: limits.Limit{Rate: 600, Per: time.Minute, Burst: 100},
		Files:   limits.Limit{Rate: 60, Per: time.Minute, Burst: 20},
	}
	// The denials the upload admission gives the file service: a byte
	// budget with room for 200 bytes refusing 300, and a key with its one
	// upload in flight.
	start := time.Now()
	admission := &limits.UploadAdmission{
		Limiter:     limits.NewLocalLimiter(limits.LocalOptions{Now: func() time.Time { return start }}),
		InFlight:    limits.NewLocalInFlight(),
		Bytes:       limits.Limit{Rate: 1000, Per: time.Hour, Burst: 1000},
		MaxInFlight: 1,
	}
	ctx := context.Background()
	release, err := admission.Admit(ctx, "k1", "w1", 800)
	if err != nil {
		t.Fatal(err)
	}
	defer release(800)
	_, bytesDenial := admission.Admit(ctx, "k2", "w1", 300)
	_, inFlightDenial := admission.Admit(ctx, "k1", "w2", 1)
	if bytesDenial == nil || inFlightDenial == nil {
		t.Fatalf("admission denied nothing: %v, %v", bytesDenial, inFlightDenial)
	}
	tests := []struct {
		name string
		err  error
		want map[string]string // "" means absent
	}{
		{
			name: "byte budget",
			err:  fmt.Errorf("begin upload: %w", bytesDenial),
			// 100 bytes too early at 3.6 s per byte: 6 minutes; 800 bytes
			// charged take 48 minutes to refill.
			want: map[string]string{"RateLimit-Limit": "1000", "RateLimit-Remaining": "200", "RateLimit-Reset": "2880", "Retry-After": "360"},
		},
		{
			name: "uploads in flight",
			err:  inFlightDenial,
			want: map[string]string{"RateLimit-Limit": "1", "RateLimit-Remaining": "0", "RateLimit-Reset": "1", "Retry-After": "1"},
		},
		{
			name: "a 429 naming no limit",
			err:  limits.ErrTooManyUploads,
			want: map[string]string{"RateLimit-Limit": "", "RateLimit-Remaining": "", "RateLimit-Reset": "", "Retry-After": "1"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			api, _ := newTestAPI(t, Options{Limits: rates})
			denied := api.adapt(func(http.ResponseWriter, *http.Request) error { return tc.err })
			h := observe(api.observation)(requireKey(api.authn, api.log)(limitRate(api.limits, limits.ClassFiles, api.log)(denied)))
			rec := do(t, h, "POST", "/api/v1/files", "standard", nil)
			if rec.Code != http.StatusTooManyRequests {
				t.Fatalf("status = %d, want 429", rec.Code)
			}
			for k, want := range tc.want {
				if got := rec.Header().Get(k); got != want {
					t.Errorf("%s = %q, want %q", k, got, want)
				}
			}
			if env := decodeEnvelope(t, rec); env.Error.Message != msgRateLimited {
				t.Errorf("message = %q, want %q", env.Error.Message, msgRateLimited)
			}
		})
	}
}

// TestRequestLimitHeaders: the per-key limit of a class answers with its
// own headers, on admission and on denial, and classes do not share a
// bucket.
func TestRequestLimitHeaders(t *testing.T) {
	rates := &RateLimits{
		Limiter: limits.NewLocalLimiter(limits.LocalOptions{}),
		Default: limits.Limit{Rate: 1, Per: time.Hour, Burst: 3},
		Files:   limits.Limit{Rate: 1, Per: time.Hour, Burst: 1},
	}
	api, _ := newTestAPI(t, Options{Limits: rates})
	ok := func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusNoContent) }
	chain := func(c limits.Class) http.Handler {
		return observe(api.observation)(requireKey(api.authn, api.log)(limitRate(api.limits, c, api.log)(http.HandlerFunc(ok))))
	}
	steps := []struct {
		class                        limits.Class
		status                       int
		limit, remaining, retryAfter string
	}{
		{limits.ClassFiles, http.StatusNoContent, "1", "0", ""},
		{limits.ClassFiles, http.StatusTooManyRequests, "1", "0", "3600"},
		{limits.ClassDefault, http.StatusNoContent, "3", "2", ""},
		{limits.ClassDefault, http.StatusNoContent, "3", "1", ""},
	}
	for i, st := range steps {
		rec := do(t, chain(st.class), "GET", "/api/v1/models", "standard", nil)
		got := []string{rec.Header().Get("RateLimit-Limit"), rec.Header().Get("RateLimit-Remaining"), rec.Header().Get("Retry-After")}
		if rec.Code != st.status || got[0] != st.limit || got[1] != st.remaining || got[2] != st.retryAfter {
			t.Errorf("step %d: %d %q, want %d [%s %s %s]", i, rec.Code, got, st.status, st.limit, st.remaining, st.retryAfter)
		}
	}
}

func TestRetryHeadersOfOtherStatuses(t *testing.T) {
	tests := []struct {
		name   string
		status int
		err    error
		want   string
	}{
		{"unavailable asks for a second", http.StatusServiceUnavailable, errUnavailable, "1"},
		{"a client error says nothing", http.StatusBadRequest, errBadRequest, ""},
		{"a limit wrapped in a 503 keeps the 503's", http.StatusServiceUnavailable, fmt.Errorf("%w: %w", errUnavailable, limits.Denied(limits.Decision{Limit: 9, RetryAfter: time.Minute}, limits.LimitUploads)), "1"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := http.Header{}
			h.Set("RateLimit-Limit", "100")
			setRetryHeaders(h, tc.status, tc.err)
			if got := h.Get("Retry-After"); got != tc.want {
				t.Errorf("Retry-After = %q, want %q", got, tc.want)
			}
			if got := h.Get("RateLimit-Limit"); got != "100" {
				t.Errorf("RateLimit-Limit = %q: only a 429 changes the request limit's headers", got)
			}
		})
	}
}

// TestRateLimitHeaderValuesStandApart: the three values share one backing
// array; adding to one must not change another.
func TestRateLimitHeaderValuesStandApart(t *testing.T) {
	h := http.Header{}
	setRateLimitHeaders(h, limits.Decision{Allowed: true, Limit: 1000, Remaining: 999, ResetAfter: 1500 * time.Millisecond})
	h.Add("RateLimit-Limit", "x")
	h.Add("RateLimit-Remaining", "y")
	if got := h.Values("RateLimit-Limit"); len(got) != 2 || got[0] != "1000" || got[1] != "x" {
		t.Errorf("RateLimit-Limit = %q", got)
	}
	if got := h.Values("RateLimit-Remaining"); len(got) != 2 || got[0] != "999" || got[1] != "y" {
		t.Errorf("RateLimit-Remaining = %q", got)
	}
	if got := h.Values("RateLimit-Reset"); len(got) != 1 || got[0] != "2" {
		t.Errorf("RateLimit-Reset = %q", got)
	}
}

// denyAndRecord refuses every request and records the limit each was
// charged to.
type denyAndRecord struct {
	mu   sync.Mutex
	keys []string
	per  []limits.Limit
}

func (d *denyAndRecord) Allow(_ context.Context, key string, l limits.Limit, _ int64) (limits.Decision, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.keys = append(d.keys, key)
	d.per = append(d.per, l)
	return limits.Decision{Limit: l.Burst, RetryAfter: time.Second, ResetAfter: time.Second}, nil
}

// TestUsageReportsHaveTheirOwnClass: usage reports are charged to the
// usage class of the key, with its limit, not to the key's default class
// (a fleet's reports through one service key would use a person's limit
// up, and be held to it).
func TestUsageReportsHaveTheirOwnClass(t *testing.T) {
	lim := &denyAndRecord{}
	usage := limits.Limit{Rate: 6000, Per: time.Minute, Burst: 600}
	api, _ := newTestAPI(t, Options{Limits: &RateLimits{
		Limiter: lim,
		Default: limits.Limit{Rate: 600, Per: time.Minute, Burst: 100},
		Usage:   usage,
	}})
	h := api.Handler()
	for _, path := range []string{apiPrefix + "/usage", apiPrefix + "/keys/00000000000000aa/usage"} {
		if rec := do(t, h, "POST", path, "standard", strings.NewReader(`{}`)); rec.Code != http.StatusTooManyRequests {
			t.Errorf("POST %s = %d, want 429 from the limiter", path, rec.Code)
		}
	}
	if rec := do(t, h, "GET", apiPrefix+"/models", "standard", nil); rec.Code != http.StatusTooManyRequests {
		t.Errorf("GET /models = %d, want 429", rec.Code)
	}
	want := []string{limits.RequestsKey(limits.ClassUsage, standardKey.ID), limits.RequestsKey(limits.ClassUsage, standardKey.ID),
		limits.RequestsKey(limits.ClassDefault, standardKey.ID)}
	if !slices.Equal(lim.keys, want) {
		t.Errorf("limits charged %v, want %v", lim.keys, want)
	}
	if len(lim.per) == 3 && (lim.per[0] != usage || lim.per[2].Burst != 100) {
		t.Errorf("limits applied %+v", lim.per)
	}
}
