package redislimit

import (
	"context"
	"testing"
	"time"

	"github.com/aigateway/gateway/policy/limitertest"
)

// TestRedisInFlightSharedAcrossInstances: two replicas (two clients) share
// one cap.
func TestRedisInFlightSharedAcrossInstances(t *testing.T) {
	c1, prefix := sharedRedis(t)
	c2, _ := sharedRedis(t)
	a := NewInFlight(c1, prefix)
	b := NewInFlight(c2, prefix)
	ctx := context.Background()

	relA, okA, err := a.Acquire(ctx, "key1", 2, time.Minute)
	if err != nil || !okA {
		t.Fatalf("a: %v %v", okA, err)
	}
	relB, okB, err := b.Acquire(ctx, "key1", 2, time.Minute)
	if err != nil || !okB {
		t.Fatalf("b: %v %v", okB, err)
	}
	for _, in := range []*InFlight{a, b} {
		if _, ok, err := in.Acquire(ctx, "key1", 2, time.Minute); err != nil || ok {
			t.Fatalf("third lease: ok=%v err=%v, want refused", ok, err)
		}
	}
	if n := c1.ZCard(ctx, prefix+"key1").Val(); n != 2 {
		t.Fatalf("%d leases stored, want 2", n)
	}
	relA()
	if n := c1.ZCard(ctx, prefix+"key1").Val(); n != 1 {
		t.Fatalf("%d leases stored after a release, want 1", n)
	}
	relB2, ok, err := b.Acquire(ctx, "key1", 2, time.Minute)
	if err != nil || !ok {
		t.Fatalf("lease after release: %v %v", ok, err)
	}
	relB()
	relB2()
	if n := c1.Exists(ctx, prefix+"key1").Val(); n != 0 {
		t.Fatal("key left behind after every lease was released")
	}
}

// TestRedisInFlightLeaseExpiry: a holder that dies (never releases, never
// renews) loses its slot after ttl, on the Redis side alone.
func TestRedisInFlightLeaseExpiry(t *testing.T) {
	client, prefix := sharedRedis(t)
	clock := limitertest.NewClock()
	in := NewInFlight(client, prefix)
	in.now = clock.Now
	ctx := context.Background()
	const ttl = 10 * time.Second

	rel, ok, err := in.Acquire(ctx, "k", 1, ttl)
	if err != nil || !ok {
		t.Fatalf("first lease: %v %v", ok, err)
	}
	defer rel()
	// The key expires with its latest lease.
	if pttl := client.PTTL(ctx, prefix+"k").Val(); !limitertest.Within(pttl, ttl, 50*time.Millisecond) {
		t.Errorf("key ttl = %s, want %s", pttl, ttl)
	}
	clock.Advance(ttl - time.Millisecond)
	if _, ok, _ := in.Acquire(ctx, "k", 1, ttl); ok {
		t.Fatal("second lease granted before the first expired")
	}
	clock.Advance(time.Millisecond)
	rel2, ok, err := in.Acquire(ctx, "k", 1, ttl)
	if err != nil || !ok {
		t.Fatalf("lease after expiry: %v %v", ok, err)
	}
	defer rel2()
	if n := client.ZCard(ctx, prefix+"k").Val(); n != 1 {
		t.Errorf("%d leases stored, want only the new one", n)
	}
}

// TestRedisInFlightRenewal: a held lease outlives its ttl because the
// handle renews it, and goes away on release.
func TestRedisInFlightRenewal(t *testing.T) {
	client, prefix := sharedRedis(t)
	in := NewInFlight(client, prefix)
	ctx := context.Background()
	const ttl = 300 * time.Millisecond

	rel, ok, err := in.Acquire(ctx, "k", 1, ttl)
	if err != nil || !ok {
		t.Fatalf("lease: %v %v", ok, err)
	}
	first := client.ZRangeWithScores(ctx, prefix+"k", 0, -1).Val()
	if len(first) != 1 {
		t.Fatalf("leases = %v", first)
	}
	// Three ttls pass: without renewal the lease would be gone.
	deadline := time.Now().Add(3 * ttl)
	for time.Now().Before(deadline) {
		time.Sleep(ttl / 2) // letting time pass is the point here
	}
	if _, ok, _ := in.Acquire(ctx, "k", 1, ttl); ok {
		t.Fatal("a renewed lease expired")
	}
	now := client.ZRangeWithScores(ctx, prefix+"k", 0, -1).Val()
	if len(now) != 1 || now[0].Score <= first[0].Score {
		t.Fatalf("lease not renewed: before %v, now %v", first, now)
	}
	rel()
	if n := client.Exists(ctx, prefix+"k").Val(); n != 0 {
		t.Fatal("lease left behind after release")
	}
	rel2, ok, _ := in.Acquire(ctx, "k", 1, ttl)
	if !ok {
		t.Fatal("slot not free after release")
	}
	rel2()
}
