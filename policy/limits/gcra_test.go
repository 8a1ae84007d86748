package limits

import (
	"testing"
	"time"
)

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
