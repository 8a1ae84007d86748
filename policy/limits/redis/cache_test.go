package redis

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aigateway/gateway/policy/limits"
)

// countingLimiter counts the calls that reach the shared limiter.
type countingLimiter struct {
	next  limits.Limiter
	calls atomic.Int64
}

func (c *countingLimiter) Allow(ctx context.Context, key string, l limits.Limit, cost int64) (limits.Decision, error) {
	c.calls.Add(1)
	return c.next.Allow(ctx, key, l, cost)
}

// TestCachedLimiterOverRedis: three replicas, each a limits.CachedLimiter
// in front of its own Failover on one Redis, hammering one key
// concurrently, stay within the shared GCRA bound; a busy key far from its
// limit costs a Redis call per block, not per request; Close gives the
// unused units back to Redis. (The cache's exact block arithmetic is
// tested in policy against an in-process shared limiter.)
func TestCachedLimiterOverRedis(t *testing.T) {
	client, prefix := sharedRedis(t)
	ctx := context.Background()
	newReplica := func(t *testing.T, replicas int) (*limits.CachedLimiter, *countingLimiter) {
		f, err := NewFailover(client, FailoverOptions{KeyPrefix: prefix, ReplicasHint: replicas, Timeout: time.Second})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = f.Close() })
		counted := &countingLimiter{next: f}
		c := limits.NewCachedLimiter(counted, limits.CacheOptions{ReplicasHint: replicas})
		t.Cleanup(func() { _ = c.Close() })
		return c, counted
	}

	t.Run("fleet bound", func(t *testing.T) {
		l := limits.Limit{Rate: 100, Per: time.Second, Burst: 300}
		caches := make([]*limits.CachedLimiter, 3)
		for i := range caches {
			caches[i], _ = newReplica(t, len(caches))
		}
		var admitted atomic.Int64
		var wg sync.WaitGroup
		start := time.Now()
		for g := range 9 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for range 200 {
					d, err := caches[g%len(caches)].Allow(ctx, "fleet", l, 1)
					if err != nil {
						t.Error(err)
						return
					}
					if d.Allowed {
						admitted.Add(1)
					}
				}
			}()
		}
		wg.Wait()
		elapsed := time.Since(start)
		bound := int64(l.Burst) + int64(elapsed.Seconds()*float64(l.Rate)) + 1
		// All replicas together hold at most 1.5/Share of the burst
		// reserved (limits.CachedLimiter's bound).
		held := int64(l.Burst) * 3 / (2 * limits.DefaultCacheShare)
		n := admitted.Load()
		t.Logf("admitted %d of 1800 in %v (bound %d)", n, elapsed, bound)
		if n > bound || n < int64(l.Burst)-held {
			t.Errorf("admitted %d in %v, want between %d and the bound %d", n, elapsed, int64(l.Burst)-held, bound)
		}
	})

	t.Run("busy key", func(t *testing.T) {
		l := limits.Limit{Rate: 1 << 30, Per: time.Second, Burst: 1 << 30}
		c, counted := newReplica(t, 1)
		const n = 2000
		for i := range n {
			if d, err := c.Allow(ctx, "busy", l, 1); err != nil || !d.Allowed {
				t.Fatalf("request %d: %+v %v", i, d, err)
			}
		}
		// Blocks grow to 1024 units; refills run in the background, and
		// while one is in flight an exhausted block sends requests to
		// Redis one by one, hence the slack over one call per block.
		if calls, most := counted.calls.Load(), int64(n/8); calls > most {
			t.Errorf("%d requests made %d Redis calls, want at most %d", n, calls, most)
		}
	})

	t.Run("close gives back", func(t *testing.T) {
		l := limits.Limit{Rate: 1, Per: time.Hour, Burst: 100}
		c, _ := newReplica(t, 1)
		for range 3 {
			if d, err := c.Allow(ctx, "back", l, 1); err != nil || !d.Allowed {
				t.Fatalf("%+v %v", d, err)
			}
		}
		r := NewLimiter(client, prefix+"rl:")
		before, err := r.Allow(ctx, "back", l, 0)
		if err != nil {
			t.Fatal(err)
		}
		// The second request reserved a block with itself: Redis has
		// charged more than the three admitted.
		if before.Remaining >= 97 {
			t.Fatalf("Redis remainder = %d with a block reserved, want less than 97", before.Remaining)
		}
		if err := c.Close(); err != nil {
			t.Fatal(err)
		}
		after, err := r.Allow(ctx, "back", l, 0)
		if err != nil {
			t.Fatal(err)
		}
		if after.Remaining != 97 {
			t.Errorf("Redis remainder after Close = %d, want 97 (three admitted, the rest given back)", after.Remaining)
		}
	})
}

// BenchmarkCachedAllowRedis is BenchmarkFailoverAllowHealthy with the cache
// in front: a hot key far from its limit.
func BenchmarkCachedAllowRedis(b *testing.B) {
	client, prefix := sharedRedis(b)
	f, err := NewFailover(client, FailoverOptions{KeyPrefix: prefix})
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	c := limits.NewCachedLimiter(f, limits.CacheOptions{})
	defer c.Close()
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := c.Allow(ctx, "bench", benchLimit, 1); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkCachedAllowRedisParallel: many requests of one hot key at once.
func BenchmarkCachedAllowRedisParallel(b *testing.B) {
	client, prefix := sharedRedis(b)
	f, err := NewFailover(client, FailoverOptions{KeyPrefix: prefix})
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	c := limits.NewCachedLimiter(f, limits.CacheOptions{})
	defer c.Close()
	ctx := context.Background()
	b.ReportAllocs()
	b.SetParallelism(8)
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := c.Allow(ctx, "bench", benchLimit, 1); err != nil {
				b.Fatal(err)
			}
		}
	})
}
