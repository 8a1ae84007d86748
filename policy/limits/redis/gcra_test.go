package redis

import (
	"context"
	"testing"
	"time"

	"github.com/aigateway/gateway/policy/limits"
	"github.com/aigateway/gateway/policy/limits/limitertest"
)

// TestGCRARedisInjectedClock runs the same table through the Lua script,
// with the clock passed in instead of Redis TIME so the expected values are
// exact.
func TestGCRARedisInjectedClock(t *testing.T) {
	client, prefix := sharedRedis(t)
	n := 0
	limitertest.RunGCRA(t, 2*time.Microsecond, func(t *testing.T, now func() time.Time) limits.Limiter {
		n++
		l := NewLimiter(client, prefix+string(rune('a'+n))+":")
		l.now = now
		return l
	})
}

// TestGCRARedisTime checks the script on the Redis clock: values within
// ±10 ms of the formulas, measuring the time that passes between calls.
func TestGCRARedisTime(t *testing.T) {
	client, prefix := sharedRedis(t)
	lim := NewLimiter(client, prefix)
	ctx := context.Background()
	const tol = 10 * time.Millisecond
	l := limits.Limit{Rate: 10, Per: time.Second, Burst: 5} // T = 100ms, tau = 500ms
	T := 100 * time.Millisecond

	start := time.Now()
	for i := 1; i <= 5; i++ {
		d, err := lim.Allow(ctx, "k", l, 1)
		if err != nil {
			t.Fatal(err)
		}
		el := time.Since(start)
		if !d.Allowed {
			t.Fatalf("request %d of the burst denied: %+v", i, d)
		}
		if d.Limit != 5 {
			t.Errorf("limit = %d, want 5", d.Limit)
		}
		// After i requests within el of the first: level = i*T - el.
		if d.Remaining != 5-i && el < T {
			t.Errorf("request %d: remaining = %d, want %d", i, d.Remaining, 5-i)
		}
		if !limitertest.Within(d.ResetAfter, time.Duration(i)*T-el, tol) {
			t.Errorf("request %d: reset = %s, want %s ±%s", i, d.ResetAfter, time.Duration(i)*T-el, tol)
		}
	}
	d, err := lim.Allow(ctx, "k", l, 1)
	if err != nil {
		t.Fatal(err)
	}
	el := time.Since(start)
	if d.Allowed {
		t.Fatalf("sixth request allowed: %+v", d)
	}
	if d.Remaining != 0 {
		t.Errorf("remaining = %d, want 0", d.Remaining)
	}
	if !limitertest.Within(d.RetryAfter, T-el, tol) {
		t.Errorf("retry after = %s, want %s ±%s", d.RetryAfter, T-el, tol)
	}
	if !limitertest.Within(d.ResetAfter, 5*T-el, tol) {
		t.Errorf("reset = %s, want %s ±%s", d.ResetAfter, 5*T-el, tol)
	}

	// The key lives exactly as long as the bucket needs to refill.
	pttl, err := client.PTTL(ctx, prefix+"k").Result()
	if err != nil {
		t.Fatal(err)
	}
	if el := time.Since(start); !limitertest.Within(pttl, 5*T-el, tol) {
		t.Errorf("key ttl = %s, want %s ±%s", pttl, 5*T-el, tol)
	}
}

func TestAllowAllRedis(t *testing.T) {
	client, prefix := sharedRedis(t)
	n := 0
	limitertest.RunAllowAll(t, func(t *testing.T) limits.Limiter {
		n++
		return NewLimiter(client, prefix+string(rune('a'+n))+":")
	})
}
