package limits

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// countingLimiter records every call that reaches the shared limiter.
type countingLimiter struct {
	next     Limiter
	degraded atomic.Bool

	mu    sync.Mutex
	costs []int64 // costs of Allow calls, in order
	batch int     // AllowAll calls
}

func (c *countingLimiter) Allow(ctx context.Context, key string, l Limit, cost int64) (Decision, error) {
	c.mu.Lock()
	c.costs = append(c.costs, cost)
	c.mu.Unlock()
	return c.next.Allow(ctx, key, l, cost)
}

func (c *countingLimiter) AllowAll(ctx context.Context, checks []Check) ([]Decision, error) {
	c.mu.Lock()
	c.batch++
	c.mu.Unlock()
	return AllowAll(ctx, c.next, checks)
}

func (c *countingLimiter) Degraded() bool { return c.degraded.Load() }

func (c *countingLimiter) calls() []int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]int64(nil), c.costs...)
}

// newTestCache is a cache whose clock is clk, whose refills run inline
// (deterministic), and whose background sweep never fires during a test
// (Hold is an hour of real time; tests sweep by hand).
func newTestCache(t *testing.T, next Limiter, clk *fakeClock, replicas int) *CachedLimiter {
	t.Helper()
	c := NewCachedLimiter(next, CacheOptions{ReplicasHint: replicas, Hold: time.Hour, Now: clk.Now})
	c.async = func(f func()) { f() }
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// slowLimit barely refills during a test, even when the clock jumps an hour.
func slowLimit(burst int) Limit { return Limit{Rate: 1, Per: 1000 * time.Hour, Burst: burst} }

// sharedRemaining reads a key's remainder in the shared limiter without
// charging it.
func sharedRemaining(t *testing.T, lim Limiter, key string, l Limit) int {
	t.Helper()
	d, err := lim.Allow(context.Background(), key, l, 0)
	if err != nil {
		t.Fatal(err)
	}
	return d.Remaining
}

func TestCachedLimiterBlockSize(t *testing.T) {
	for _, tc := range []struct {
		name     string
		burst    int
		replicas int
		opts     CacheOptions
		want     int64
	}{
		{"default burst, one replica", 100, 1, CacheOptions{}, 12},
		{"default burst, three replicas", 100, 3, CacheOptions{}, 4},
		{"tight limit is not cached", 10, 3, CacheOptions{}, 0},
		{"huge limit capped by MaxBlock", 1 << 30, 3, CacheOptions{}, DefaultCacheMaxBlock},
		{"own MaxBlock", 1 << 30, 1, CacheOptions{MaxBlock: 10}, 10},
		{"block and request fit the burst", 3, 1, CacheOptions{Share: 1}, 2},
		{"burst 2 is too small", 2, 1, CacheOptions{Share: 1}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.opts.ReplicasHint = tc.replicas
			c := NewCachedLimiter(NewLocalLimiter(LocalOptions{}), tc.opts)
			defer c.Close()
			if got := c.block(Limit{Rate: 1, Per: time.Second, Burst: tc.burst}); got != tc.want {
				t.Errorf("block = %d, want %d", got, tc.want)
			}
		})
	}
}

// TestCachedLimiterPassesThrough: other costs, tight limits, batches and
// invalid checks reach the shared limiter unchanged.
func TestCachedLimiterPassesThrough(t *testing.T) {
	ctx := context.Background()
	clk := newFakeClock()
	shared := &countingLimiter{next: NewLocalLimiter(LocalOptions{Now: clk.Now})}
	c := newTestCache(t, shared, clk, 1)
	big := slowLimit(1000)

	for _, cost := range []int64{0, 5, -3} {
		if _, err := c.Allow(ctx, "k", big, cost); err != nil {
			t.Fatalf("cost %d: %v", cost, err)
		}
	}
	tight := slowLimit(2)
	for range 3 {
		_, _ = c.Allow(ctx, "tight", tight, 1)
	}
	if _, err := c.AllowAll(ctx, []Check{{"a", big, 1}, {"b", big, 1}}); err != nil {
		t.Fatal(err)
	}
	if got, want := shared.calls(), []int64{0, 5, -3, 1, 1, 1}; !equalCosts(got, want) {
		t.Errorf("costs reaching the shared limiter = %v, want %v", got, want)
	}
	if shared.batch != 1 {
		t.Errorf("AllowAll reached the shared limiter %d times, want 1", shared.batch)
	}
	if c.Len() != 0 {
		t.Errorf("uncached checks left %d keys in the cache", c.Len())
	}

	_, err := c.Allow(ctx, "bad", Limit{Rate: 0, Per: time.Second, Burst: 10}, 1)
	if !errors.Is(err, ErrInvalidLimit) {
		t.Errorf("invalid limit: %v, want ErrInvalidLimit", err)
	}
	var eb *ExceedsBurstError
	if _, err := c.Allow(ctx, "k", slowLimit(3), 4); !errors.As(err, &eb) {
		t.Errorf("cost over the burst: %v, want *ExceedsBurstError", err)
	}
}

// TestCachedLimiterQuietKeyIsExact: a key checked less often than Hold
// never reserves: one shared call of cost 1 per request.
func TestCachedLimiterQuietKeyIsExact(t *testing.T) {
	ctx := context.Background()
	clk := newFakeClock()
	shared := &countingLimiter{next: NewLocalLimiter(LocalOptions{Now: clk.Now})}
	c := newTestCache(t, shared, clk, 1)
	l := slowLimit(100)
	for i := range 5 {
		d, err := c.Allow(ctx, "quiet", l, 1)
		if err != nil || !d.Allowed {
			t.Fatalf("request %d: %+v %v", i, d, err)
		}
		clk.Advance(time.Hour + time.Second)
	}
	if got, want := shared.calls(), []int64{1, 1, 1, 1, 1}; !equalCosts(got, want) {
		t.Errorf("costs = %v, want %v", got, want)
	}
}

// TestCachedLimiterBusyKeySavesCalls: a busy key far from its limit costs
// one shared call per block, and its decisions stay sane.
func TestCachedLimiterBusyKeySavesCalls(t *testing.T) {
	ctx := context.Background()
	clk := newFakeClock()
	shared := &countingLimiter{next: NewLocalLimiter(LocalOptions{Now: clk.Now})}
	c := newTestCache(t, shared, clk, 1)
	l := Limit{Rate: 1 << 30, Per: time.Second, Burst: 1 << 30}
	const n = 10_000
	for i := range n {
		d, err := c.Allow(ctx, "busy", l, 1)
		if err != nil || !d.Allowed {
			t.Fatalf("request %d: %+v %v", i, d, err)
		}
		if d.Limit != 1<<30 || d.Remaining < 0 || d.Remaining > d.Limit {
			t.Fatalf("request %d: decision %+v out of range", i, d)
		}
		clk.Advance(10 * time.Microsecond)
	}
	calls := shared.calls()
	// The first request alone, then reservations growing to 1024.
	if most := 2 + n/64; len(calls) > most {
		t.Errorf("%d requests made %d shared calls, want at most %d", n, len(calls), most)
	}
	if calls[0] != 1 || calls[1] != 1+firstBlock {
		t.Errorf("first costs %v, want 1 then a reservation of 1+%d", calls[:2], firstBlock)
	}
}

// TestCachedLimiterBlocksGrow: a key whose blocks last less than Hold/8
// reserves twice as much each time, up to the largest block; a moderate
// key keeps small blocks.
func TestCachedLimiterBlocksGrow(t *testing.T) {
	ctx := context.Background()
	clk := newFakeClock()
	shared := &countingLimiter{next: NewLocalLimiter(LocalOptions{Now: clk.Now})}
	c := newTestCache(t, shared, clk, 1) // Hold 1h: blocks grow when used up within 7.5 min
	l := Limit{Rate: 1 << 30, Per: time.Second, Burst: 1 << 30}
	for range 5000 {
		if _, err := c.Allow(ctx, "fast", l, 1); err != nil {
			t.Fatal(err)
		}
		clk.Advance(time.Millisecond)
	}
	want := []int64{1, 1 + 8, 16, 32, 64, 128, 256, 512, 1024, 1024}
	if got := shared.calls(); !equalCosts(got[:min(len(got), len(want))], want) {
		t.Errorf("costs of a fast key %v, want them to start %v", got, want)
	}

	shared.costs = nil
	for range 20 {
		if _, err := c.Allow(ctx, "moderate", l, 1); err != nil {
			t.Fatal(err)
		}
		clk.Advance(5 * time.Minute) // a block of 8 lasts 20 min
	}
	for i, cost := range shared.calls()[2:] {
		if cost != 8 {
			t.Fatalf("reservation %d of a moderate key is %d, want 8 (costs %v)", i, cost, shared.calls())
		}
	}
}

// TestCachedLimiterAdmitsExactlyTheBurst: one replica hammering a key
// gets exactly its burst — reservations stop at half the burst, and the
// rest is checked request by request — and the last admission says
// nothing remains.
func TestCachedLimiterAdmitsExactlyTheBurst(t *testing.T) {
	ctx := context.Background()
	clk := newFakeClock()
	shared := &countingLimiter{next: NewLocalLimiter(LocalOptions{Now: clk.Now})}
	c := newTestCache(t, shared, clk, 1)
	l := slowLimit(100)
	admitted := 0
	var last Decision
	for i := range 200 {
		d, err := c.Allow(ctx, "k", l, 1)
		if err != nil {
			t.Fatal(err)
		}
		if d.Allowed {
			admitted++
			last = d
		} else if d.RetryAfter <= 0 || d.Remaining != 0 {
			t.Fatalf("request %d denied with %+v", i, d)
		}
	}
	if admitted != 100 {
		t.Errorf("admitted %d of 200, want exactly the burst 100", admitted)
	}
	if last.Remaining != 0 {
		t.Errorf("last admission says %d remain, want 0", last.Remaining)
	}
	// Once under half the burst every check goes to the shared limiter
	// with cost 1: the 100 denials and the admissions just before them.
	calls := shared.calls()
	if len(calls) < 130 {
		t.Fatalf("only %d shared calls for 200 requests: near the limit each must be checked", len(calls))
	}
	for _, cost := range calls[len(calls)-130:] {
		if cost != 1 {
			t.Fatalf("a reservation (cost %d) near the limit; costs %v", cost, calls)
		}
	}
}

// TestCachedLimiterFleetBound: three replicas, each with its own cache,
// sharing one limiter (Redis's stand-in) never admit more than the shared
// GCRA bound, and admit at most the reserved share less than the shared
// limiter alone would.
func TestCachedLimiterFleetBound(t *testing.T) {
	ctx := context.Background()
	clk := newFakeClock()
	l := Limit{Rate: 100, Per: time.Second, Burst: 300}
	shared := NewLocalLimiter(LocalOptions{Now: clk.Now})
	exact := NewLocalLimiter(LocalOptions{Now: clk.Now})
	caches := make([]*CachedLimiter, 3)
	for i := range caches {
		caches[i] = newTestCache(t, shared, clk, len(caches))
	}
	k := caches[0].block(l)
	if k < minBlock {
		t.Fatalf("block %d: the limit is not cached, the test tests nothing", k)
	}
	const step = 100 * time.Microsecond
	const n = 20_000 // 2 s at 10,000 requests/s, 100 times the limit
	admitted, admittedExact := 0, 0
	for i := range n {
		d, err := caches[i%len(caches)].Allow(ctx, "hot", l, 1)
		if err != nil {
			t.Fatal(err)
		}
		if d.Allowed {
			admitted++
		}
		if d, _ := exact.Allow(ctx, "hot", l, 1); d.Allowed {
			admittedExact++
		}
		clk.Advance(step)
	}
	elapsed := time.Duration(n) * step
	bound := l.Burst + int(elapsed.Seconds()*float64(l.Rate)/l.Per.Seconds()) + 1
	if admitted > bound {
		t.Errorf("fleet admitted %d, more than the GCRA bound %d", admitted, bound)
	}
	held := 3 * len(caches) * int(k) / 2
	if admitted < admittedExact-held {
		t.Errorf("fleet admitted %d, more than the reserved share %d below the exact %d", admitted, held, admittedExact)
	}
	t.Logf("admitted %d (exact limiter %d, bound %d, block %d)", admitted, admittedExact, bound, k)
}

// TestCachedLimiterConcurrentFleet: the same bound with real goroutines,
// background refills and the real clock (run with -race).
func TestCachedLimiterConcurrentFleet(t *testing.T) {
	ctx := context.Background()
	l := Limit{Rate: 2000, Per: time.Second, Burst: 500}
	shared := NewLocalLimiter(LocalOptions{})
	caches := make([]*CachedLimiter, 3)
	for i := range caches {
		caches[i] = NewCachedLimiter(shared, CacheOptions{ReplicasHint: len(caches)})
	}
	var admitted atomic.Int64
	var wg sync.WaitGroup
	start := time.Now()
	for g := range 12 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := caches[g%len(caches)]
			for range 2000 {
				d, err := c.Allow(ctx, "hot", l, 1)
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
	for _, c := range caches {
		if err := c.Close(); err != nil {
			t.Fatal(err)
		}
		if c.Len() != 0 {
			t.Errorf("Close left %d keys", c.Len())
		}
	}
	bound := int64(l.Burst) + int64(elapsed.Seconds()*float64(l.Rate)) + 1
	if n := admitted.Load(); n > bound || n < int64(l.Burst)/2 {
		t.Errorf("admitted %d of 24000 in %v, want between half the burst and the bound %d", n, elapsed, bound)
	}
}

// TestCachedLimiterGivesBackIdleUnits: a key idle for Hold is forgotten and
// its unused units return to the shared bucket — in one batch — unless
// the shared limiter is degraded, when they would land in the wrong bucket.
func TestCachedLimiterGivesBackIdleUnits(t *testing.T) {
	for _, degraded := range []bool{false, true} {
		name := map[bool]string{false: "healthy", true: "degraded"}[degraded]
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			clk := newFakeClock()
			local := NewLocalLimiter(LocalOptions{Now: clk.Now})
			shared := &countingLimiter{next: local}
			c := newTestCache(t, shared, clk, 1)
			l := slowLimit(100)
			k := int(min(firstBlock, c.block(l)))
			for range 2 {
				if d, err := c.Allow(ctx, "k", l, 1); err != nil || !d.Allowed {
					t.Fatalf("%+v %v", d, err)
				}
			}
			if got, want := sharedRemaining(t, local, "k", l), 100-2-k; got != want {
				t.Fatalf("shared remainder after a reservation = %d, want %d", got, want)
			}
			shared.degraded.Store(degraded)

			c.sweep(false) // not idle yet: nothing happens
			if c.Len() != 1 {
				t.Fatalf("a busy key was forgotten")
			}
			clk.Advance(time.Hour)
			c.sweep(false)
			if c.Len() != 0 {
				t.Errorf("an idle key is still remembered")
			}
			want := 98
			if degraded {
				want = 100 - 2 - k
			}
			if got := sharedRemaining(t, local, "k", l); got != want {
				t.Errorf("shared remainder after the sweep = %d, want %d", got, want)
			}
			if wantBatches := map[bool]int{false: 1, true: 0}[degraded]; shared.batch != wantBatches {
				t.Errorf("%d batches of give-backs, want %d", shared.batch, wantBatches)
			}
		})
	}
}

// TestCachedLimiterCloseGivesBack: Close returns every unused unit.
func TestCachedLimiterCloseGivesBack(t *testing.T) {
	ctx := context.Background()
	clk := newFakeClock()
	local := NewLocalLimiter(LocalOptions{Now: clk.Now})
	c := NewCachedLimiter(local, CacheOptions{Now: clk.Now})
	l := slowLimit(100)
	for _, key := range []string{"a", "a", "a", "b", "b"} {
		if _, err := c.Allow(ctx, key, l, 1); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if got := sharedRemaining(t, local, "a", l); got != 97 {
		t.Errorf("key a remainder after Close = %d, want 97", got)
	}
	if got := sharedRemaining(t, local, "b", l); got != 98 {
		t.Errorf("key b remainder after Close = %d, want 98", got)
	}
	// Still usable after Close.
	if d, err := c.Allow(ctx, "a", l, 1); err != nil || !d.Allowed {
		t.Errorf("after Close: %+v %v", d, err)
	}
}

// TestCachedLimiterLimitChange: a key checked under a new limit gives back
// the block reserved under the old one.
func TestCachedLimiterLimitChange(t *testing.T) {
	ctx := context.Background()
	clk := newFakeClock()
	local := NewLocalLimiter(LocalOptions{Now: clk.Now})
	shared := &countingLimiter{next: local}
	c := newTestCache(t, shared, clk, 1)
	old, next := slowLimit(100), slowLimit(200)
	for range 2 {
		_, _ = c.Allow(ctx, "k", old, 1)
	}
	d, err := c.Allow(ctx, "k", next, 1)
	if err != nil || !d.Allowed || d.Limit != 200 {
		t.Fatalf("under the new limit: %+v %v", d, err)
	}
	calls := shared.calls()
	k := min(firstBlock, c.block(old))
	if len(calls) != 4 || calls[2] != -k || calls[3] != 1 {
		t.Errorf("costs %v, want 1, 1+%d, the give-back -%d, then 1", calls, k, k)
	}
}

// TestCachedLimiterMaxKeys: past MaxKeys new keys are checked uncached.
func TestCachedLimiterMaxKeys(t *testing.T) {
	ctx := context.Background()
	clk := newFakeClock()
	shared := &countingLimiter{next: NewLocalLimiter(LocalOptions{Now: clk.Now})}
	c := NewCachedLimiter(shared, CacheOptions{MaxKeys: 2, Hold: time.Hour, Now: clk.Now})
	defer c.Close()
	l := slowLimit(1000)
	for _, key := range []string{"a", "b", "c", "c", "c", "c"} {
		if _, err := c.Allow(ctx, key, l, 1); err != nil {
			t.Fatal(err)
		}
	}
	if c.Len() != 2 {
		t.Errorf("Len = %d, want 2", c.Len())
	}
	calls := shared.calls()
	for _, cost := range calls[2:] {
		if cost != 1 {
			t.Fatalf("an uncached key reserved: costs %v", calls)
		}
	}
}

func equalCosts(a, b []int64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// BenchmarkCachedAllowLocal is the cache's own cost: a hot key answered
// from its block, refills included, in front of an in-process limiter.
func BenchmarkCachedAllowLocal(b *testing.B) {
	c := NewCachedLimiter(NewLocalLimiter(LocalOptions{}), CacheOptions{})
	defer c.Close()
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := c.Allow(ctx, "bench", benchLimit, 1); err != nil {
			b.Fatal(err)
		}
	}
}
