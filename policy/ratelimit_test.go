package policy

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"
)

func TestDecisionSetHeaders(t *testing.T) {
	tests := []struct {
		name string
		d    Decision
		want map[string]string // "" means absent
	}{
		{
			name: "allowed",
			d:    Decision{Allowed: true, Limit: 100, Remaining: 42, ResetAfter: 1500 * time.Millisecond},
			want: map[string]string{"RateLimit-Limit": "100", "RateLimit-Remaining": "42", "RateLimit-Reset": "2", "Retry-After": ""},
		},
		{
			name: "allowed full bucket",
			d:    Decision{Allowed: true, Limit: 5, Remaining: 5},
			want: map[string]string{"RateLimit-Limit": "5", "RateLimit-Remaining": "5", "RateLimit-Reset": "0", "Retry-After": ""},
		},
		{
			name: "denied rounds retry up",
			d:    Decision{Limit: 20, RetryAfter: 2001 * time.Millisecond, ResetAfter: 60 * time.Second},
			want: map[string]string{"RateLimit-Limit": "20", "RateLimit-Remaining": "0", "RateLimit-Reset": "60", "Retry-After": "3"},
		},
		{
			name: "denied with a sub-second wait still says one second",
			d:    Decision{Limit: 20, RetryAfter: time.Millisecond, ResetAfter: time.Millisecond},
			want: map[string]string{"RateLimit-Reset": "1", "Retry-After": "1"},
		},
		{
			name: "denied exact seconds",
			d:    Decision{Limit: 1, RetryAfter: 30 * time.Second, ResetAfter: 30 * time.Second},
			want: map[string]string{"RateLimit-Reset": "30", "Retry-After": "30"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := http.Header{}
			h.Set("Retry-After", "stale")
			tc.d.SetHeaders(h)
			for k, want := range tc.want {
				if got := h.Get(k); got != want {
					t.Errorf("%s = %q, want %q", k, got, want)
				}
			}
		})
	}
}

func TestLimitValidate(t *testing.T) {
	tests := []struct {
		l  Limit
		ok bool
	}{
		{Limit{Rate: 1, Per: time.Second}, true},
		{Limit{Rate: 1, Per: time.Second, Burst: 10}, true},
		{Limit{Rate: 0, Per: time.Second, Burst: 1}, false},
		{Limit{Rate: 1, Per: 0, Burst: 1}, false},
		{Limit{Rate: 1, Per: -time.Second, Burst: 1}, false},
		{Limit{Rate: 1, Per: time.Second, Burst: -1}, false},
	}
	for _, tc := range tests {
		err := tc.l.Validate()
		if (err == nil) != tc.ok || (err != nil && !errors.Is(err, ErrInvalidLimit)) {
			t.Errorf("%+v: Validate() = %v, want ok=%v", tc.l, err, tc.ok)
		}
		// Every limiter refuses an invalid limit the same way.
		if !tc.ok {
			if _, err := NewLocalLimiter(LocalOptions{}).Allow(context.Background(), "k", tc.l, 1); !errors.Is(err, ErrInvalidLimit) {
				t.Errorf("%+v: Allow err = %v, want ErrInvalidLimit", tc.l, err)
			}
		}
	}
}

func TestExceedsBurstError(t *testing.T) {
	_, err := NewLocalLimiter(LocalOptions{}).Allow(context.Background(), "k", Limit{Rate: 10, Per: time.Second, Burst: 4}, 5)
	var e *ExceedsBurstError
	if !errors.As(err, &e) || !errors.Is(err, ErrExceedsBurst) {
		t.Fatalf("err = %v, want *ExceedsBurstError wrapping ErrExceedsBurst", err)
	}
	md := e.Metadata()
	if md["cost"] != int64(5) || md["limit"] != int64(4) {
		t.Errorf("metadata = %v", md)
	}
}

func TestStrictest(t *testing.T) {
	a := Decision{Allowed: true, Limit: 10, Remaining: 7}
	b := Decision{Allowed: true, Limit: 10, Remaining: 2}
	c := Decision{Allowed: false, Limit: 10, RetryAfter: time.Second}
	d := Decision{Allowed: false, Limit: 10, RetryAfter: 3 * time.Second}
	tests := []struct {
		name string
		in   []Decision
		want Decision
	}{
		{"none", nil, Decision{Allowed: true}},
		{"fewest remaining", []Decision{a, b}, b},
		{"a denial wins", []Decision{a, c, b}, c},
		{"longest denial wins", []Decision{c, a, d}, d},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := Strictest(tc.in); got != tc.want {
				t.Errorf("Strictest = %+v, want %+v", got, tc.want)
			}
			if got, want := Allowed(tc.in), tc.want.Allowed; got != want {
				t.Errorf("Allowed = %v, want %v", got, want)
			}
		})
	}
}

// onlyAllow hides LocalLimiter's AllowAll, to test the generic fallback.
type onlyAllow struct{ l *LocalLimiter }

func (o onlyAllow) Allow(ctx context.Context, key string, l Limit, cost int64) (Decision, error) {
	return o.l.Allow(ctx, key, l, cost)
}

// batchLimiterCases run against every BatchLimiter (and the generic
// AllowAll): when one check denies, none stays charged.
func runAllowAllTests(t *testing.T, newLimiter func(t *testing.T) Limiter) {
	ctx := context.Background()
	perKey := Limit{Rate: 10, Per: time.Minute, Burst: 3}
	perWS := Limit{Rate: 10, Per: time.Minute, Burst: 2}
	peek := func(t *testing.T, lim Limiter, key string, l Limit) int {
		t.Helper()
		d, err := lim.Allow(ctx, key, l, 0)
		if err != nil {
			t.Fatal(err)
		}
		return d.Remaining
	}

	t.Run("all allowed charges all", func(t *testing.T) {
		lim := newLimiter(t)
		ds, err := AllowAll(ctx, lim, []Check{{"key", perKey, 1}, {"ws", perWS, 1}})
		if err != nil || !Allowed(ds) {
			t.Fatalf("AllowAll = %+v, %v", ds, err)
		}
		if ds[0].Remaining != 2 || ds[1].Remaining != 1 {
			t.Errorf("remaining = %d, %d; want 2, 1", ds[0].Remaining, ds[1].Remaining)
		}
		if peek(t, lim, "key", perKey) != 2 || peek(t, lim, "ws", perWS) != 1 {
			t.Error("not charged")
		}
	})

	t.Run("denied on one charges none", func(t *testing.T) {
		lim := newLimiter(t)
		if _, err := lim.Allow(ctx, "ws", perWS, 2); err != nil {
			t.Fatal(err)
		}
		ds, err := AllowAll(ctx, lim, []Check{{"key", perKey, 1}, {"ws", perWS, 1}})
		if err != nil {
			t.Fatal(err)
		}
		if Allowed(ds) || !ds[0].Allowed || ds[1].Allowed {
			t.Fatalf("decisions = %+v, want the key allowed and the workspace denied", ds)
		}
		if ds[1].RetryAfter <= 0 {
			t.Errorf("denied decision without retry: %+v", ds[1])
		}
		if got := peek(t, lim, "key", perKey); got != 3 {
			t.Errorf("key left with %d remaining, want 3 (refunded)", got)
		}
	})

	t.Run("same key twice", func(t *testing.T) {
		lim := newLimiter(t)
		ds, err := AllowAll(ctx, lim, []Check{{"key", perKey, 2}, {"key", perKey, 2}})
		if err != nil {
			t.Fatal(err)
		}
		if Allowed(ds) {
			t.Fatalf("4 units passed a burst of 3: %+v", ds)
		}
		if got := peek(t, lim, "key", perKey); got != 3 {
			t.Errorf("key left with %d remaining, want 3", got)
		}
	})

	t.Run("cost over a burst charges none", func(t *testing.T) {
		lim := newLimiter(t)
		ds, err := AllowAll(ctx, lim, []Check{{"key", perKey, 1}, {"ws", perWS, 3}})
		if !errors.Is(err, ErrExceedsBurst) || Allowed(ds) || len(ds) != 2 {
			t.Fatalf("AllowAll = %+v, %v; want ErrExceedsBurst", ds, err)
		}
		if got := peek(t, lim, "key", perKey); got != 3 {
			t.Errorf("key left with %d remaining, want 3", got)
		}
	})
}

func TestAllowAllLocal(t *testing.T) {
	runAllowAllTests(t, func(t *testing.T) Limiter { return NewLocalLimiter(LocalOptions{}) })
}

func TestAllowAllGeneric(t *testing.T) {
	runAllowAllTests(t, func(t *testing.T) Limiter { return onlyAllow{NewLocalLimiter(LocalOptions{})} })
}

func TestAllowAllRedis(t *testing.T) {
	client, prefix := sharedRedis(t)
	n := 0
	runAllowAllTests(t, func(t *testing.T) Limiter {
		n++
		return NewRedisLimiter(client, prefix+string(rune('a'+n))+":")
	})
}
