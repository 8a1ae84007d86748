package redis

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/aigateway/gateway/policy/limits"
)

// TestRedisLimiterScriptFlushed: a server that lost its script cache (a
// restart, a failover, SCRIPT FLUSH) is reloaded transparently, and the
// NOSCRIPT retry charges each check once. On a server of the test's own,
// since flushing scripts is global.
func TestRedisLimiterScriptFlushed(t *testing.T) {
	srv := startRedisServer(t)
	client, err := NewClient(ClientOptions{URL: srv.URL(), Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	lim := NewLimiter(client, "")
	ctx := context.Background()
	l := limits.Limit{Rate: 10, Per: time.Minute, Burst: 10}

	for round := 0; round < 2; round++ {
		if err := client.ScriptFlush(ctx).Err(); err != nil {
			t.Fatal(err)
		}
		ds, err := lim.AllowAll(ctx, []limits.Check{{Key: "a", Limit: l, Cost: 1}, {Key: "b", Limit: l, Cost: 2}})
		if err != nil || !limits.Allowed(ds) {
			t.Fatalf("round %d: limits.AllowAll = %+v, %v", round, ds, err)
		}
		if want := []int{9 - round, 8 - 2*round}; ds[0].Remaining != want[0] || ds[1].Remaining != want[1] {
			t.Fatalf("round %d: remaining = %d, %d; want %v (each check charged once)", round, ds[0].Remaining, ds[1].Remaining, want)
		}
	}
	if err := client.ScriptFlush(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	d, err := lim.Allow(ctx, "a", l, 1)
	if err != nil || d.Remaining != 7 {
		t.Fatalf("Allow after flush = %+v, %v; want 7 remaining", d, err)
	}
	if n := client.Exists(ctx, DefaultRateKeyPrefix+"a").Val(); n != 1 {
		t.Error("default prefix not used")
	}
}

// TestRedisLimiterErrorsWrapUnavailable: Redis trouble is reported as
// ErrLimiterUnavailable by the plain Redis limiter.
func TestRedisLimiterErrorsWrapUnavailable(t *testing.T) {
	lim := NewLimiter(deadRedis(t), "")
	l := limits.Limit{Rate: 1, Per: time.Second, Burst: 1}
	if _, err := lim.Allow(context.Background(), "k", l, 1); !isUnavailable(err) {
		t.Errorf("Allow err = %v, want limits.ErrLimiterUnavailable", err)
	}
	if _, err := lim.AllowAll(context.Background(), []limits.Check{{Key: "k", Limit: l, Cost: 1}}); !isUnavailable(err) {
		t.Errorf("AllowAll err = %v, want limits.ErrLimiterUnavailable", err)
	}
	if _, _, err := NewInFlight(deadRedis(t), "").Acquire(context.Background(), "k", 1, time.Second); !isUnavailable(err) {
		t.Errorf("Acquire err = %v, want limits.ErrLimiterUnavailable", err)
	}
}

func isUnavailable(err error) bool { return errors.Is(err, limits.ErrLimiterUnavailable) }
