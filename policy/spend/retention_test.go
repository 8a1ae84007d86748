package spend

import (
	"context"
	"testing"
	"time"
)

// pruner holds n old reports and deletes them as asked.
type pruner struct {
	left    int
	cutoffs []time.Time
	limits  []int
}

func (p *pruner) PruneReports(_ context.Context, cutoff time.Time, limit int) (int, error) {
	p.cutoffs, p.limits = append(p.cutoffs, cutoff), append(p.limits, limit)
	n := min(p.left, limit)
	p.left -= n
	return n, nil
}

// TestRetentionPrunesInBatches: a pass deletes batch after bounded batch
// until one comes back short, every report that arrived more than 36 days
// ago and nothing younger.
func TestRetentionPrunesInBatches(t *testing.T) {
	p := &pruner{left: 2500}
	r := &Retention{Store: p, Batch: 1000, Pause: time.Microsecond, now: func() time.Time { return now }}
	n, err := r.Prune(context.Background())
	if err != nil || n != 2500 || p.left != 0 {
		t.Fatalf("pruned %d, %v; %d left", n, err, p.left)
	}
	if len(p.limits) != 3 || p.limits[0] != 1000 || p.limits[2] != 1000 {
		t.Errorf("batches %v, want three of at most 1000", p.limits)
	}
	if want := now.Add(-36 * 24 * time.Hour); !p.cutoffs[0].Equal(want) {
		t.Errorf("cutoff %v, want %v", p.cutoffs[0], want)
	}
}
