package policy

import (
	"context"
	"strconv"
	"testing"
	"time"
)

// Benchmarks of one decision. Redis ones need GATEWAY_TEST_REDIS_URL:
//
//	go test -run '^$' -bench . -benchmem ./policy/

var benchLimit = Limit{Rate: 1 << 30, Per: time.Second, Burst: 1 << 30}

func BenchmarkLocalAllow(b *testing.B) {
	lim := NewLocalLimiter(LocalOptions{})
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := lim.Allow(ctx, "bench", benchLimit, 1); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkLocalAllowParallelKeys(b *testing.B) {
	lim := NewLocalLimiter(LocalOptions{})
	keys := make([]string, 1024)
	for i := range keys {
		keys[i] = "bench" + strconv.Itoa(i)
	}
	ctx := context.Background()
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		i := 0
		for pb.Next() {
			i++
			if _, err := lim.Allow(ctx, keys[i%len(keys)], benchLimit, 1); err != nil {
				b.Fatal(err)
			}
		}
	})
}

func BenchmarkRedisAllow(b *testing.B) {
	client, prefix := sharedRedis(b)
	lim := NewRedisLimiter(client, prefix)
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := lim.Allow(ctx, "bench", benchLimit, 1); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkRedisAllowParallel(b *testing.B) {
	client, prefix := sharedRedis(b)
	lim := NewRedisLimiter(client, prefix)
	ctx := context.Background()
	b.ReportAllocs()
	b.SetParallelism(8) // requests wait on the network, not the CPU
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := lim.Allow(ctx, "bench", benchLimit, 1); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkRedisAllowAllTwo is the upload check: per key and per workspace
// in one pipelined round trip.
func BenchmarkRedisAllowAllTwo(b *testing.B) {
	client, prefix := sharedRedis(b)
	lim := NewRedisLimiter(client, prefix)
	ctx := context.Background()
	checks := []Check{{"key", benchLimit, 1}, {"ws", benchLimit, 1}}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := lim.AllowAll(ctx, checks); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkRedisAllowTwoSequential is what AllowAll saves.
func BenchmarkRedisAllowTwoSequential(b *testing.B) {
	client, prefix := sharedRedis(b)
	lim := NewRedisLimiter(client, prefix)
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := lim.Allow(ctx, "key", benchLimit, 1); err != nil {
			b.Fatal(err)
		}
		if _, err := lim.Allow(ctx, "ws", benchLimit, 1); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkFailoverAllowHealthy(b *testing.B) {
	client, prefix := sharedRedis(b)
	f, err := NewFailoverLimiter(client, FailoverOptions{KeyPrefix: prefix})
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := f.Allow(ctx, "bench", benchLimit, 1); err != nil {
			b.Fatal(err)
		}
	}
}
