package policy

import (
	"context"
	"errors"
	"testing"
	"time"
)

// gcraStepCase is one call of a GCRA table: at a clock offset from the start
// of the case, a cost, and what the GCRA formulas say the decision is.
type gcraStepCase struct {
	at        time.Duration
	cost      int64
	allowed   bool
	remaining int
	retry     time.Duration
	reset     time.Duration
	err       error
}

type gcraCase struct {
	name  string
	limit Limit
	// remainingTol is the accepted error of Remaining, in units (byte
	// budgets carry the microsecond rounding slack of the scripts).
	remainingTol int
	steps        []gcraStepCase
}

const gib = int64(1) << 30

// gcraCases are computed by hand from the GCRA formulas, with T = Per/Rate
// the emission interval, tau = T*Burst the tolerance, TAT the theoretical
// arrival time (now when idle): a request of cost c is allowed iff
// max(TAT,now) + c*T - now <= tau; then Remaining = floor((tau - level)/T)
// with level = TAT - now, ResetAfter = level, and when denied
// RetryAfter = max(TAT,now) + c*T - tau - now.
var gcraCases = []gcraCase{
	{
		// T = 100ms, tau = 500ms.
		name:  "burst, spacing, cost above one, refund, idle",
		limit: Limit{Rate: 10, Per: time.Second, Burst: 5},
		steps: []gcraStepCase{
			{at: 0, cost: 1, allowed: true, remaining: 4, reset: 100 * time.Millisecond},
			{at: 0, cost: 1, allowed: true, remaining: 3, reset: 200 * time.Millisecond},
			{at: 0, cost: 1, allowed: true, remaining: 2, reset: 300 * time.Millisecond},
			{at: 0, cost: 1, allowed: true, remaining: 1, reset: 400 * time.Millisecond},
			{at: 0, cost: 1, allowed: true, remaining: 0, reset: 500 * time.Millisecond},
			// TAT 500ms: 500+100-500 = 100ms too early.
			{at: 0, cost: 1, allowed: false, remaining: 0, retry: 100 * time.Millisecond, reset: 500 * time.Millisecond},
			{at: 50 * time.Millisecond, cost: 1, allowed: false, remaining: 0, retry: 50 * time.Millisecond, reset: 450 * time.Millisecond},
			// level 400 + 100 = 500 = tau: exactly at the limit passes.
			{at: 100 * time.Millisecond, cost: 1, allowed: true, remaining: 0, reset: 500 * time.Millisecond},
			// TAT 600, now 350: level 250 + 200 = 450.
			{at: 350 * time.Millisecond, cost: 2, allowed: true, remaining: 0, reset: 450 * time.Millisecond},
			// level 450 + 300 = 750 > 500: retry 250ms; one unit is not
			// free either (floor(50/100) = 0).
			{at: 350 * time.Millisecond, cost: 3, allowed: false, remaining: 0, retry: 250 * time.Millisecond, reset: 450 * time.Millisecond},
			// Refund 2: level 450 - 200 = 250.
			{at: 350 * time.Millisecond, cost: -2, allowed: true, remaining: 2, reset: 250 * time.Millisecond},
			// TAT 600 is long past: idle. Cost 0 reads.
			{at: 2 * time.Second, cost: 0, allowed: true, remaining: 5, reset: 0},
			{at: 2 * time.Second, cost: 6, allowed: false, err: ErrExceedsBurst},
			{at: 2 * time.Second, cost: 5, allowed: true, remaining: 0, reset: 500 * time.Millisecond},
			// A refund never leaves more than a full bucket.
			{at: 2 * time.Second, cost: -100, allowed: true, remaining: 5, reset: 0},
			{at: 2 * time.Second, cost: 5, allowed: true, remaining: 0, reset: 500 * time.Millisecond},
		},
	},
	{
		// Burst 0 behaves as 1: T = tau = 500ms.
		name:  "burst zero admits one per interval",
		limit: Limit{Rate: 2, Per: time.Second, Burst: 0},
		steps: []gcraStepCase{
			{at: 0, cost: 1, allowed: true, remaining: 0, reset: 500 * time.Millisecond},
			{at: 0, cost: 1, allowed: false, remaining: 0, retry: 500 * time.Millisecond, reset: 500 * time.Millisecond},
			{at: 499 * time.Millisecond, cost: 1, allowed: false, remaining: 0, retry: time.Millisecond, reset: time.Millisecond},
			{at: 500 * time.Millisecond, cost: 1, allowed: true, remaining: 0, reset: 500 * time.Millisecond},
			{at: 500 * time.Millisecond, cost: 2, allowed: false, err: ErrExceedsBurst},
		},
	},
	{
		// T = 1/3 s, not a whole number of anything: the boundaries must
		// still hold after rounding.
		name:  "fractional interval",
		limit: Limit{Rate: 3, Per: time.Second, Burst: 3},
		steps: []gcraStepCase{
			{at: 0, cost: 1, allowed: true, remaining: 2, reset: 333333333},
			{at: 0, cost: 1, allowed: true, remaining: 1, reset: 666666667},
			{at: 0, cost: 1, allowed: true, remaining: 0, reset: time.Second},
			{at: 0, cost: 1, allowed: false, remaining: 0, retry: 333333333, reset: time.Second},
			{at: time.Second, cost: 3, allowed: true, remaining: 0, reset: time.Second},
		},
	},
	{
		// The upload byte budget: 20 GiB per hour, all of it at once.
		// T = 3600s / 20Gi bytes, so 10 GiB take 30 minutes.
		name:         "byte budget with declared sizes and reconciliation",
		limit:        Limit{Rate: int(20 * gib), Per: time.Hour, Burst: int(20 * gib)},
		remainingTol: 64,
		steps: []gcraStepCase{
			{at: 0, cost: 100_000_000_000, allowed: false, err: ErrExceedsBurst},
			{at: 0, cost: 10 * gib, allowed: true, remaining: int(10 * gib), reset: 30 * time.Minute},
			// 10 + 15 = 25 GiB: 5 GiB (15 minutes) too early.
			{at: 0, cost: 15 * gib, allowed: false, remaining: int(10 * gib), retry: 15 * time.Minute, reset: 30 * time.Minute},
			{at: 15 * time.Minute, cost: 15 * gib, allowed: true, remaining: 0, reset: time.Hour},
			// The upload was 5 GiB smaller than declared.
			{at: 15 * time.Minute, cost: -5 * gib, allowed: true, remaining: int(5 * gib), reset: 45 * time.Minute},
			{at: 15 * time.Minute, cost: 5*gib + 1<<20, allowed: false, remaining: int(5 * gib), retry: 3600 * time.Second / 20 / 1024, reset: 45 * time.Minute},
		},
	},
	{
		// A trillion units per hour: T = 3.6 ns, costs of 1e11 and more.
		// Below 0.1 µs per unit the Redis clock's float resolution costs
		// a few units of precision, hence the tolerance.
		name:         "huge costs do not overflow",
		limit:        Limit{Rate: 1_000_000_000_000, Per: time.Hour, Burst: 1_000_000_000_000},
		remainingTol: 16,
		steps: []gcraStepCase{
			{at: 0, cost: 100_000_000_000, allowed: true, remaining: 900_000_000_000, reset: 6 * time.Minute},
			{at: 0, cost: 899_999_999_000, allowed: true, remaining: 1000, reset: time.Hour - 3600*time.Nanosecond},
			{at: 0, cost: 2000, allowed: false, remaining: 1000, retry: 3600 * time.Nanosecond, reset: time.Hour - 3600*time.Nanosecond},
			{at: time.Hour, cost: 0, allowed: true, remaining: 1_000_000_000_000},
		},
	},
}

// runGCRATable runs every case against limiters made by newLimiter, which
// must read its time from clock.
func runGCRATable(t *testing.T, tol time.Duration, newLimiter func(t *testing.T, clock *fakeClock) Limiter) {
	for _, tc := range gcraCases {
		t.Run(tc.name, func(t *testing.T) {
			clock := newFakeClock()
			start := clock.Now()
			lim := newLimiter(t, clock)
			ctx := context.Background()
			for i, st := range tc.steps {
				clock.Advance(start.Add(st.at).Sub(clock.Now()))
				d, err := lim.Allow(ctx, "k", tc.limit, st.cost)
				if st.err != nil {
					if !errors.Is(err, st.err) {
						t.Fatalf("step %d (cost %d at %s): err = %v, want %v", i, st.cost, st.at, err, st.err)
					}
					if d.Allowed {
						t.Fatalf("step %d: allowed with error %v", i, err)
					}
					continue
				}
				if err != nil {
					t.Fatalf("step %d (cost %d at %s): %v", i, st.cost, st.at, err)
				}
				checkDecision(t, i, d, st, tc.remainingTol, tol)
			}
		})
	}
}

func checkDecision(t *testing.T, i int, d Decision, want gcraStepCase, remTol int, tol time.Duration) {
	t.Helper()
	if d.Allowed != want.allowed {
		t.Fatalf("step %d (cost %d at %s): allowed = %v, want %v (%+v)", i, want.cost, want.at, d.Allowed, want.allowed, d)
	}
	if diff := d.Remaining - want.remaining; diff < -remTol || diff > remTol {
		t.Errorf("step %d: remaining = %d, want %d ±%d", i, d.Remaining, want.remaining, remTol)
	}
	if !within(d.RetryAfter, want.retry, tol) {
		t.Errorf("step %d: retry after = %s, want %s ±%s", i, d.RetryAfter, want.retry, tol)
	}
	if !within(d.ResetAfter, want.reset, tol) {
		t.Errorf("step %d: reset after = %s, want %s ±%s", i, d.ResetAfter, want.reset, tol)
	}
}

func within(got, want, tol time.Duration) bool {
	d := got - want
	return d >= -tol && d <= tol
}

func TestGCRALocal(t *testing.T) {
	runGCRATable(t, time.Microsecond, func(t *testing.T, clock *fakeClock) Limiter {
		return NewLocalLimiter(LocalOptions{Now: clock.Now})
	})
}

// TestGCRARedisInjectedClock runs the same table through the Lua script,
// with the clock passed in instead of Redis TIME so the expected values are
// exact.
func TestGCRARedisInjectedClock(t *testing.T) {
	client, prefix := sharedRedis(t)
	n := 0
	runGCRATable(t, 2*time.Microsecond, func(t *testing.T, clock *fakeClock) Limiter {
		n++
		l := NewRedisLimiter(client, prefix+string(rune('a'+n))+":")
		l.now = clock.Now
		return l
	})
}

// TestGCRARedisTime checks the script on the Redis clock: values within
// ±10 ms of the formulas, measuring the time that passes between calls.
func TestGCRARedisTime(t *testing.T) {
	client, prefix := sharedRedis(t)
	lim := NewRedisLimiter(client, prefix)
	ctx := context.Background()
	const tol = 10 * time.Millisecond
	l := Limit{Rate: 10, Per: time.Second, Burst: 5} // T = 100ms, tau = 500ms
	T := 100 * time.Millisecond

	start := time.Now()
	for i := 1; i <= 5; i++ {
		d, err := lim.Allow(ctx, "k", l, 1)
		if err != nil {
			t.Fatal(err)
		}
		el := time.Since(start)
		if !d.Allowed {
			t.Fatalf("request %d of the burst denied: %+v", i, d)
		}
		if d.Limit != 5 {
			t.Errorf("limit = %d, want 5", d.Limit)
		}
		// After i requests within el of the first: level = i*T - el.
		if d.Remaining != 5-i && el < T {
			t.Errorf("request %d: remaining = %d, want %d", i, d.Remaining, 5-i)
		}
		if !within(d.ResetAfter, time.Duration(i)*T-el, tol) {
			t.Errorf("request %d: reset = %s, want %s ±%s", i, d.ResetAfter, time.Duration(i)*T-el, tol)
		}
	}
	d, err := lim.Allow(ctx, "k", l, 1)
	if err != nil {
		t.Fatal(err)
	}
	el := time.Since(start)
	if d.Allowed {
		t.Fatalf("sixth request allowed: %+v", d)
	}
	if d.Remaining != 0 {
		t.Errorf("remaining = %d, want 0", d.Remaining)
	}
	if !within(d.RetryAfter, T-el, tol) {
		t.Errorf("retry after = %s, want %s ±%s", d.RetryAfter, T-el, tol)
	}
	if !within(d.ResetAfter, 5*T-el, tol) {
		t.Errorf("reset = %s, want %s ±%s", d.ResetAfter, 5*T-el, tol)
	}

	// The key lives exactly as long as the bucket needs to refill.
	pttl, err := client.PTTL(ctx, prefix+"k").Result()
	if err != nil {
		t.Fatal(err)
	}
	if el := time.Since(start); !within(pttl, 5*T-el, tol) {
		t.Errorf("key ttl = %s, want %s ±%s", pttl, 5*T-el, tol)
	}
}

// TestGCRAStepRoundingAtBoundaries charges whole bursts one unit at a time
// for awkward intervals: the last unit of a burst must pass, the next must
// not.
func TestGCRAStepRoundingAtBoundaries(t *testing.T) {
	for _, l := range []Limit{
		{Rate: 3, Per: time.Second, Burst: 100},
		{Rate: 7, Per: time.Minute, Burst: 1000},
		{Rate: 600, Per: time.Minute, Burst: 100},
		{Rate: 1_000_000, Per: time.Second, Burst: 10_000},
		{Rate: 1, Per: 24 * time.Hour, Burst: 3},
	} {
		now := float64(1e15) // far from zero, as after days of uptime
		tat := now
		for i := 1; i <= l.Burst; i++ {
			var d Decision
			tat, d = gcraStep(tat, now, l, 1)
			if !d.Allowed || d.Remaining != l.Burst-i {
				t.Fatalf("%+v: unit %d: %+v, want allowed with %d remaining", l, i, d, l.Burst-i)
			}
		}
		if _, d := gcraStep(tat, now, l, 1); d.Allowed {
			t.Fatalf("%+v: unit past the burst allowed", l)
		}
	}
}
