package redis

import (
	"context"
	"testing"
	"time"

	"github.com/aigateway/gateway/policy/limits"
)

// Benchmarks of one decision; they need GATEWAY_TEST_REDIS_URL:
//
//	go test -run '^$' -bench . -benchmem ./limits/redis/

var benchLimit = limits.Limit{Rate: 1 << 30, Per: time.Second, Burst: 1 << 30}

func BenchmarkRedisAllow(b *testing.B) {
	client, prefix := sharedRedis(b)
	lim := NewLimiter(client, prefix)
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
	lim := NewLimiter(client, prefix)
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
	lim := NewLimiter(client, prefix)
	ctx := context.Background()
	checks := []limits.Check{{Key: "key", Limit: benchLimit, Cost: 1}, {Key: "ws", Limit: benchLimit, Cost: 1}}
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
	lim := NewLimiter(client, prefix)
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
	f, err := NewFailover(client, FailoverOptions{KeyPrefix: prefix})
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
