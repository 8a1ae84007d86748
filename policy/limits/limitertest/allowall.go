package limitertest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/aigateway/gateway/policy/limits"
)

// RunAllowAll checks the batch rules of limits.AllowAll through a limiter
// (its own AllowAll when it is a limits.BatchLimiter): a batch charges
// every check or none, a denial names the check that denied, and a cost
// over a burst charges nothing. Each subtest gets a fresh limiter from
// newLimiter, sharing no state with the others.
func RunAllowAll(t *testing.T, newLimiter func(t *testing.T) limits.Limiter) {
	t.Helper()
	ctx := context.Background()
	perKey := limits.Limit{Rate: 10, Per: time.Minute, Burst: 3}
	perWS := limits.Limit{Rate: 10, Per: time.Minute, Burst: 2}
	peek := func(t *testing.T, lim limits.Limiter, key string, l limits.Limit) int {
		t.Helper()
		d, err := lim.Allow(ctx, key, l, 0)
		if err != nil {
			t.Fatal(err)
		}
		return d.Remaining
	}

	t.Run("all allowed charges all", func(t *testing.T) {
		lim := newLimiter(t)
		ds, err := limits.AllowAll(ctx, lim, []limits.Check{{Key: "key", Limit: perKey, Cost: 1}, {Key: "ws", Limit: perWS, Cost: 1}})
		if err != nil || !limits.Allowed(ds) {
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
		ds, err := limits.AllowAll(ctx, lim, []limits.Check{{Key: "key", Limit: perKey, Cost: 1}, {Key: "ws", Limit: perWS, Cost: 1}})
		if err != nil {
			t.Fatal(err)
		}
		if limits.Allowed(ds) || !ds[0].Allowed || ds[1].Allowed {
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
		ds, err := limits.AllowAll(ctx, lim, []limits.Check{{Key: "key", Limit: perKey, Cost: 2}, {Key: "key", Limit: perKey, Cost: 2}})
		if err != nil {
			t.Fatal(err)
		}
		if limits.Allowed(ds) {
			t.Fatalf("4 units passed a burst of 3: %+v", ds)
		}
		if got := peek(t, lim, "key", perKey); got != 3 {
			t.Errorf("key left with %d remaining, want 3", got)
		}
	})

	t.Run("cost over a burst charges none", func(t *testing.T) {
		lim := newLimiter(t)
		ds, err := limits.AllowAll(ctx, lim, []limits.Check{{Key: "key", Limit: perKey, Cost: 1}, {Key: "ws", Limit: perWS, Cost: 3}})
		if !errors.Is(err, limits.ErrExceedsBurst) || limits.Allowed(ds) || len(ds) != 2 {
			t.Fatalf("AllowAll = %+v, %v; want ErrExceedsBurst", ds, err)
		}
		if got := peek(t, lim, "key", perKey); got != 3 {
			t.Errorf("key left with %d remaining, want 3", got)
		}
	})
}
