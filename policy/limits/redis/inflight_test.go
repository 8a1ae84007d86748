package redis

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/aigateway/gateway/policy/limits/limitertest"
	goredis "github.com/redis/go-redis/v9"
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

// pipelineCounter counts the pipelines a client sends and the commands in
// them.
type pipelineCounter struct {
	mu                  sync.Mutex
	pipelines, commands int
}

func (c *pipelineCounter) DialHook(next goredis.DialHook) goredis.DialHook { return next }
func (c *pipelineCounter) ProcessHook(next goredis.ProcessHook) goredis.ProcessHook {
	return next
}

func (c *pipelineCounter) ProcessPipelineHook(next goredis.ProcessPipelineHook) goredis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []goredis.Cmder) error {
		c.mu.Lock()
		c.pipelines++
		c.commands += len(cmds)
		c.mu.Unlock()
		return next(ctx, cmds)
	}
}

func (c *pipelineCounter) counts() (int, int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.pipelines, c.commands
}

// TestRedisInFlightRenewalIsBatched: the leases one replica holds are
// renewed together, one round trip per interval, not one per lease.
func TestRedisInFlightRenewalIsBatched(t *testing.T) {
	client, prefix := sharedRedis(t)
	counter := &pipelineCounter{}
	client.AddHook(counter)
	in := NewInFlight(client, prefix)
	ctx := context.Background()
	const ttl, leases = 300 * time.Millisecond, 6
	var releases []func()
	for i := range leases {
		rel, ok, err := in.Acquire(ctx, fmt.Sprintf("k%d", i), 1, ttl)
		if err != nil || !ok {
			t.Fatalf("lease %d: %v %v", i, ok, err)
		}
		releases = append(releases, rel)
	}
	deadline := time.Now().Add(3 * ttl)
	for time.Now().Before(deadline) {
		time.Sleep(ttl / 2) // letting time pass is the point here
	}
	pipelines, commands := counter.counts()
	for _, rel := range releases {
		rel()
	}
	// Three ttls are about nine renewal intervals.
	if pipelines < 3 || pipelines > 12 || commands != pipelines*leases {
		t.Errorf("%d pipelines of %d renewals for %d leases over %v: want one pipeline of all leases per interval",
			pipelines, commands, leases, 3*ttl)
	}
	for i := range leases {
		if n := client.Exists(ctx, fmt.Sprintf("%sk%d", prefix, i)).Val(); n != 0 {
			t.Errorf("lease %d left behind after release", i)
		}
	}
}
