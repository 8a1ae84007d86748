// Package limitertest is the contract suite of limits.Limiter: the same
// hand-computed GCRA tables and batch rules run against every
// implementation (the in-process limiter, the Redis one, the failover
// limiter in both of its states), so they cannot drift apart.
package limitertest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/aigateway/gateway/policy/limits"
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
	limit limits.Limit
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
		limit: limits.Limit{Rate: 10, Per: time.Second, Burst: 5},
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
			{at: 2 * time.Second, cost: 6, allowed: false, err: limits.ErrExceedsBurst},
			{at: 2 * time.Second, cost: 5, allowed: true, remaining: 0, reset: 500 * time.Millisecond},
			// A refund never leaves more than a full bucket.
			{at: 2 * time.Second, cost: -100, allowed: true, remaining: 5, reset: 0},
			{at: 2 * time.Second, cost: 5, allowed: true, remaining: 0, reset: 500 * time.Millisecond},
		},
	},
	{
		// Burst 0 behaves as 1: T = tau = 500ms.
		name:  "burst zero admits one per interval",
		limit: limits.Limit{Rate: 2, Per: time.Second, Burst: 0},
		steps: []gcraStepCase{
			{at: 0, cost: 1, allowed: true, remaining: 0, reset: 500 * time.Millisecond},
			{at: 0, cost: 1, allowed: false, remaining: 0, retry: 500 * time.Millisecond, reset: 500 * time.Millisecond},
			{at: 499 * time.Millisecond, cost: 1, allowed: false, remaining: 0, retry: time.Millisecond, reset: time.Millisecond},
			{at: 500 * time.Millisecond, cost: 1, allowed: true, remaining: 0, reset: 500 * time.Millisecond},
			{at: 500 * time.Millisecond, cost: 2, allowed: false, err: limits.ErrExceedsBurst},
		},
	},
	{
		// T = 1/3 s, not a whole number of anything: the boundaries must
		// still hold after rounding.
		name:  "fractional interval",
		limit: limits.Limit{Rate: 3, Per: time.Second, Burst: 3},
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
		limit:        limits.Limit{Rate: int(20 * gib), Per: time.Hour, Burst: int(20 * gib)},
		remainingTol: 64,
		steps: []gcraStepCase{
			{at: 0, cost: 100_000_000_000, allowed: false, err: limits.ErrExceedsBurst},
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
		limit:        limits.Limit{Rate: 1_000_000_000_000, Per: time.Hour, Burst: 1_000_000_000_000},
		remainingTol: 16,
		steps: []gcraStepCase{
			{at: 0, cost: 100_000_000_000, allowed: true, remaining: 900_000_000_000, reset: 6 * time.Minute},
			{at: 0, cost: 899_999_999_000, allowed: true, remaining: 1000, reset: time.Hour - 3600*time.Nanosecond},
			{at: 0, cost: 2000, allowed: false, remaining: 1000, retry: 3600 * time.Nanosecond, reset: time.Hour - 3600*time.Nanosecond},
			{at: time.Hour, cost: 0, allowed: true, remaining: 1_000_000_000_000},
		},
	},
}

// RunGCRA checks a limiter against GCRA tables computed by hand: bursts,
// spacing, costs above one, refunds, reads (cost 0), costs over the burst,
// fractional intervals, byte budgets and costs of 1e11 and more. Each case
// gets a fresh limiter from newLimiter, which must read its time from now
// (a settable clock starting near real time, so a limiter that sends times
// to a server sends plausible ones) and must not share state with the
// limiters of other cases. tol is the accepted error of RetryAfter and
// ResetAfter.
func RunGCRA(t *testing.T, tol time.Duration, newLimiter func(t *testing.T, now func() time.Time) limits.Limiter) {
	t.Helper()
	for _, tc := range gcraCases {
		t.Run(tc.name, func(t *testing.T) {
			clock := NewClock()
			start := clock.Now()
			lim := newLimiter(t, clock.Now)
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

func checkDecision(t *testing.T, i int, d limits.Decision, want gcraStepCase, remTol int, tol time.Duration) {
	t.Helper()
	if d.Allowed != want.allowed {
		t.Fatalf("step %d (cost %d at %s): allowed = %v, want %v (%+v)", i, want.cost, want.at, d.Allowed, want.allowed, d)
	}
	if diff := d.Remaining - want.remaining; diff < -remTol || diff > remTol {
		t.Errorf("step %d: remaining = %d, want %d ±%d", i, d.Remaining, want.remaining, remTol)
	}
	if !Within(d.RetryAfter, want.retry, tol) {
		t.Errorf("step %d: retry after = %s, want %s ±%s", i, d.RetryAfter, want.retry, tol)
	}
	if !Within(d.ResetAfter, want.reset, tol) {
		t.Errorf("step %d: reset after = %s, want %s ±%s", i, d.ResetAfter, want.reset, tol)
	}
}

// Within reports whether got is want give or take tol.
func Within(got, want, tol time.Duration) bool {
	d := got - want
	return d >= -tol && d <= tol
}
