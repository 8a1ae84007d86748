package audit

import (
	"context"
	"errors"
	"testing"
	"time"
)

// pruner holds old entries and deletes them as asked, failing on demand.
type pruner struct {
	left    int
	failAt  int // the call (1-based) that fails; 0: none
	cutoffs []time.Time
	limits  []int
}

var errDown = errors.New("database down")

func (p *pruner) PruneAudit(_ context.Context, cutoff time.Time, limit int) (int, error) {
	p.cutoffs, p.limits = append(p.cutoffs, cutoff), append(p.limits, limit)
	if len(p.limits) == p.failAt {
		return 0, errDown
	}
	n := min(p.left, limit)
	p.left -= n
	return n, nil
}

var now = time.Date(2026, 11, 28, 3, 0, 0, 0, time.UTC)

func TestRetention(t *testing.T) {
	tests := []struct {
		name       string
		keep       time.Duration
		left       int
		failAt     int
		wantN      int
		wantErr    error
		wantCalls  int
		wantCutoff time.Time
	}{
		{"DefaultKeep400Days", 0, 2500, 0, 2500, nil, 3, now.Add(-400 * 24 * time.Hour)},
		{"ConfiguredKeep", 30 * 24 * time.Hour, 999, 0, 999, nil, 1, now.Add(-30 * 24 * time.Hour)},
		{"NothingOld", time.Hour, 0, 0, 0, nil, 1, now.Add(-time.Hour)},
		{"ExactBatchNeedsOneMoreLook", time.Hour, 2000, 0, 2000, nil, 3, now.Add(-time.Hour)},
		{"StopsAtFailure", time.Hour, 5000, 2, 1000, errDown, 2, now.Add(-time.Hour)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := &pruner{left: tt.left, failAt: tt.failAt}
			r := &Retention{Store: p, Keep: tt.keep, Batch: 1000, Pause: time.Microsecond,
				now: func() time.Time { return now }}
			n, err := r.Prune(context.Background())
			if n != tt.wantN || !errors.Is(err, tt.wantErr) {
				t.Fatalf("Prune = %d, %v; want %d, %v", n, err, tt.wantN, tt.wantErr)
			}
			if len(p.limits) != tt.wantCalls {
				t.Fatalf("%d batches %v, want %d", len(p.limits), p.limits, tt.wantCalls)
			}
			for i := range p.limits {
				if p.limits[i] != 1000 || !p.cutoffs[i].Equal(tt.wantCutoff) {
					t.Errorf("batch %d: limit %d cutoff %v, want 1000 and %v", i, p.limits[i], p.cutoffs[i], tt.wantCutoff)
				}
			}
		})
	}
}

// TestRetentionRunStopsWithContext: Run makes a pass at once and returns
// when its context ends.
func TestRetentionRunStopsWithContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	p := &blockingPruner{called: make(chan struct{}, 1)}
	r := &Retention{Store: p, Interval: time.Hour}
	done := make(chan struct{})
	go func() { r.Run(ctx); close(done) }()
	<-p.called
	cancel()
	<-done
}

type blockingPruner struct{ called chan struct{} }

func (p *blockingPruner) PruneAudit(context.Context, time.Time, int) (int, error) {
	select {
	case p.called <- struct{}{}:
	default:
	}
	return 0, nil
}
