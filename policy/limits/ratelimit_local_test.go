package limits

import (
	"context"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestLocalLimiterConcurrent hammers one key from many goroutines on a
// frozen clock: exactly the burst passes, whatever the interleaving.
func TestLocalLimiterConcurrent(t *testing.T) {
	clock := newFakeClock()
	lim := NewLocalLimiter(LocalOptions{Now: clock.Now})
	l := Limit{Rate: 100, Per: time.Second, Burst: 50}
	var allowed atomic.Int64
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 100; i++ {
				d, err := lim.Allow(context.Background(), "hot", l, 1)
				if err != nil {
					t.Error(err)
					return
				}
				if d.Allowed {
					allowed.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	if got := allowed.Load(); got != 50 {
		t.Fatalf("%d requests passed a burst of 50", got)
	}
}

func TestLocalLimiterBoundedMemory(t *testing.T) {
	clock := newFakeClock()
	lim := NewLocalLimiter(LocalOptions{Now: clock.Now, MaxKeys: 100})
	l := Limit{Rate: 1, Per: time.Hour, Burst: 10}
	ctx := context.Background()
	for i := 0; i < 1000; i++ {
		if _, err := lim.Allow(ctx, "k"+strconv.Itoa(i), l, 1); err != nil {
			t.Fatal(err)
		}
		if n := lim.Len(); n > 100 {
			t.Fatalf("after %d keys the limiter holds %d, bound 100", i+1, n)
		}
	}

	// Idle keys go first: once the old keys have refilled, inserting busy
	// keys sweeps them and no busy key is lost.
	clock.Advance(2 * time.Hour)
	for i := 0; i < 50; i++ {
		if _, err := lim.Allow(ctx, "busy"+strconv.Itoa(i), l, 10); err != nil {
			t.Fatal(err)
		}
	}
	if n := lim.Len(); n != 50 {
		t.Errorf("after the sweep the limiter holds %d keys, want the 50 busy ones", n)
	}
	for i := 0; i < 50; i++ {
		d, err := lim.Allow(ctx, "busy"+strconv.Itoa(i), l, 1)
		if err != nil {
			t.Fatal(err)
		}
		if d.Allowed {
			t.Fatalf("busy%d was forgotten while idle keys could be dropped", i)
		}
	}
}

func TestLocalLimiterForgetsFullBuckets(t *testing.T) {
	clock := newFakeClock()
	lim := NewLocalLimiter(LocalOptions{Now: clock.Now})
	l := Limit{Rate: 10, Per: time.Second, Burst: 10}
	ctx := context.Background()
	if _, err := lim.Allow(ctx, "k", l, 4); err != nil {
		t.Fatal(err)
	}
	if lim.Len() != 1 {
		t.Fatalf("len = %d, want 1", lim.Len())
	}
	// A refund back to a full bucket removes the entry.
	if _, err := lim.Allow(ctx, "k", l, -4); err != nil {
		t.Fatal(err)
	}
	if lim.Len() != 0 {
		t.Fatalf("len = %d after a full refund, want 0", lim.Len())
	}
	// Denied and read-only calls store nothing.
	if _, err := lim.Allow(ctx, "other", l, 0); err != nil {
		t.Fatal(err)
	}
	if lim.Len() != 0 {
		t.Fatalf("len = %d after a read, want 0", lim.Len())
	}
}
