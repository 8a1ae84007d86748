package limits

import (
	"context"
	"strconv"
	"testing"
	"time"
)

// Benchmarks of one decision. Redis ones need GATEWAY_TEST_REDIS_URL:
//
//	go test -run '^$' -bench . -benchmem ./limits/

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
