package policy

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestCachedLimiterOverRedis: three replicas, each a cache in front of its
// own FailoverLimiter on one Redis, hammering one key concurrently, stay
// within the shared GCRA bound; a busy key far from its limit costs one
// Redis call per block; Close gives the unused units back to Redis.
func TestCachedLimiterOverRedis(t *testing.T) {
	client, prefix := sharedRedis(t)
	ctx := context.Background()
	newReplica := func(t *testing.T, replicas int) (*CachedLimiter, *countingLimiter) {
		f, err := NewFailoverLimiter(client, FailoverOptions{KeyPrefix: prefix, ReplicasHint: replicas, Timeout: time.Second})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = f.Close() })
		counted := &countingLimiter{next: f}
		c := NewCachedLimiter(counted, CacheOptions{ReplicasHint: replicas})
		t.Cleanup(func() { _ = c.Close() })
		return c, counted
	}

	t.Run("fleet bound", func(t *testing.T) {
		l := Limit{Rate: 100, Per: time.Second, Burst: 300}
		caches := make([]*CachedLimiter, 3)
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
		held := int64(3 * len(caches) * int(caches[0].block(l)) / 2)
		n := admitted.Load()
		t.Logf("admitted %d of 1800 in %v (bound %d)", n, elapsed, bound)
		if n > bound || n < int64(l.Burst)-held {
			t.Errorf("admitted %d in %v, want between %d and the bound %d", n, elapsed, int64(l.Burst)-held, bound)
		}
	})

	t.Run("busy key", func(t *testing.T) {
		l := Limit{Rate: 1 << 30, Per: time.Second, Burst: 1 << 30}
		c, counted := newReplica(t, 1)
		c.async = func(f func()) { f() } // refills inline: one call per block exactly
		const n = 2000
		for i := range n {
			if d, err := c.Allow(ctx, "busy", l, 1); err != nil || !d.Allowed {
				t.Fatalf("request %d: %+v %v", i, d, err)
			}
		}
		if calls, most := len(counted.calls()), 2+n/64; calls > most {
			t.Errorf("%d requests made %d Redis calls, want at most %d", n, calls, most)
		}
	})

	t.Run("close gives back", func(t *testing.T) {
		l := Limit{Rate: 1, Per: time.Hour, Burst: 100}
		c, _ := newReplica(t, 1)
		for range 3 {
			if d, err := c.Allow(ctx, "back", l, 1); err != nil || !d.Allowed {
				t.Fatalf("%+v %v", d, err)
			}
		}
		r := NewRedisLimiter(client, prefix+"rl:")
		before, err := r.Allow(ctx, "back", l, 0)
		if err != nil {
			t.Fatal(err)
		}
		if want := 100 - 2 - int(min(firstBlock, c.block(l))); before.Remaining != want {
			t.Fatalf("Redis remainder with a block reserved = %d, want %d", before.Remaining, want)
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
	f, err := NewFailoverLimiter(client, FailoverOptions{KeyPrefix: prefix})
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	c := NewCachedLimiter(f, CacheOptions{})
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
	f, err := NewFailoverLimiter(client, FailoverOptions{KeyPrefix: prefix})
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	c := NewCachedLimiter(f, CacheOptions{})
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
