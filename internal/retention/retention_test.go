package retention

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"
)

var now = time.Date(2026, 11, 28, 3, 0, 0, 0, time.UTC)

// TestPassStopsWhenContextEnds: a pass with rows left stops between two
// batches once its context ends, with what it deleted so far.
func TestPassStopsWhenContextEnds(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	calls := 0
	l := &Loop{Keep: time.Hour, Batch: 10, Pause: time.Hour, Now: func() time.Time { return now },
		Prune: func(_ context.Context, cutoff time.Time, limit int) (int, error) {
			calls++
			if !cutoff.Equal(now.Add(-time.Hour)) || limit != 10 {
				t.Errorf("Prune(%v, %d), want (%v, 10)", cutoff, limit, now.Add(-time.Hour))
			}
			cancel() // the pause after this full batch is where it must stop
			return limit, nil
		}}
	n, err := l.Pass(ctx)
	if n != 10 || !errors.Is(err, context.Canceled) || calls != 1 {
		t.Fatalf("Pass = %d, %v after %d batches; want 10, context.Canceled after 1", n, err, calls)
	}
}

// TestRunLogsPasses: Run logs a pass that deleted something, naming what,
// and a pass that failed, and keeps going after a failure.
func TestRunLogsPasses(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	var logged bytes.Buffer
	results := []error{errors.New("database down"), nil}
	l := &Loop{What: "audit entries", Keep: time.Hour, Interval: time.Microsecond,
		Log: slog.New(slog.NewTextHandler(&logged, nil)),
		Prune: func(context.Context, time.Time, int) (int, error) {
			if len(results) == 0 {
				cancel()
				return 0, nil
			}
			err := results[0]
			results = results[1:]
			if err != nil {
				return 0, err
			}
			return 3, nil
		}}
	l.Run(ctx)
	out := logged.String()
	if strings.Count(out, "audit entries past their retention deleted") != 2 ||
		!strings.Contains(out, "database down") || !strings.Contains(out, "deleted=3") {
		t.Errorf("log:\n%s", out)
	}
}
