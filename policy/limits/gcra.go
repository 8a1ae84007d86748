package limits

import (
	"math"
	"time"
)

// gcraSlack absorbs float rounding at exact boundaries (a burst of 100
// charged in 100 steps must not deny the 100th): a request that would end
// within min(1 µs, T/2) past the tolerance still passes. Half an interval
// at most, so it never admits an extra unit; Remaining uses the same slack,
// so it is always the largest cost that would pass now. The Lua script of
// policy/limits/redis uses the same slack, so both limiters agree.
const gcraSlack = float64(time.Microsecond)

func slackFor(t float64) float64 { return math.Min(gcraSlack, t/2) }

// gcraStep applies cost at now to a key whose theoretical arrival time is
// tat; times are nanoseconds on one clock, and tat <= now means the key is
// idle (a full bucket). It returns the tat to store (unchanged when denied)
// and the decision. The limit must be valid and cost at most its capacity,
// or the decision is meaningless.
//
// This is the reference for the Lua script: keep the two in step.
func gcraStep(tat, now float64, l Limit, cost int64) (float64, Decision) {
	t := l.Interval()
	capacity := l.Capacity()
	tau := t * float64(capacity)
	slack := slackFor(t)
	if tat < now {
		tat = now
	}
	newTat := tat + float64(cost)*t
	if newTat < now {
		// A refund never leaves more than a full bucket.
		newTat = now
	}
	d := Decision{Allowed: true, Limit: int(capacity)}
	if cost > 0 && newTat-now > tau+slack {
		d.Allowed = false
		d.RetryAfter = ceilDuration(newTat - tau - now)
		newTat = tat
	}
	level := newTat - now
	d.Remaining = gcraRemaining(tau-level+slack, t, capacity)
	d.ResetAfter = ceilDuration(level)
	return newTat, d
}

// gcraRemaining is the number of units of interval t that fit in room
// nanoseconds, between 0 and capacity.
func gcraRemaining(room, t float64, capacity int64) int {
	r := math.Floor(room / t)
	switch {
	case r < 0:
		return 0
	case r > float64(capacity):
		return int(capacity)
	}
	return int(r)
}

// ceilDuration converts float nanoseconds to a Duration, rounding up and
// saturating instead of overflowing.
func ceilDuration(ns float64) time.Duration {
	switch {
	case ns <= 0:
		return 0
	case ns >= math.MaxInt64:
		return math.MaxInt64
	}
	return time.Duration(math.Ceil(ns))
}
