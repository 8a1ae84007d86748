package spend

import (
	"context"
	"log/slog"
	"time"
)

// RawRetention is how long a raw report is kept after it arrived: a day
// past MaxReportAge, so that while a replay could still be counted (its at
// no older than 35 days) its first copy is there to tell it is one; past
// that, the replay is refused by its at. What stays for all time is the
// daily rollup.
const RawRetention = MaxReportAge + 24*time.Hour

// Pruner is a Store that can delete old raw reports.
type Pruner interface {
	// PruneReports deletes raw reports that arrived before cutoff, in one
	// short transaction per batch, at most limit of them row by row (a
	// store may also drop a whole day of them at once), and returns how
	// many it deleted row by row.
	PruneReports(ctx context.Context, cutoff time.Time, limit int) (int, error)
}

// Retention deletes raw reports older than RawRetention, in batches small
// enough that each transaction holds the database's writer a few
// milliseconds, letting the reports being recorded in between.
type Retention struct {
	Store Pruner
	// Batch bounds the reports deleted a transaction (default 1,000).
	Batch int
	// Interval between passes once nothing is left to delete (default a
	// minute).
	Interval time.Duration
	// Pause between two full batches of one pass (default 10 ms).
	Pause time.Duration
	Log   *slog.Logger
	now   func() time.Time
}

// Prune deletes, batch after batch, every raw report older than
// RawRetention, and returns how many it deleted.
func (r *Retention) Prune(ctx context.Context) (int, error) {
	batch := r.Batch
	if batch <= 0 {
		batch = 1000
	}
	now := time.Now
	if r.now != nil {
		now = r.now
	}
	cutoff := now().Add(-RawRetention)
	total := 0
	for {
		n, err := r.Store.PruneReports(ctx, cutoff, batch)
		total += n
		if err != nil || n < batch {
			return total, err
		}
		pause := r.Pause
		if pause <= 0 {
			pause = 10 * time.Millisecond
		}
		select {
		case <-ctx.Done():
			return total, ctx.Err()
		case <-time.After(pause):
		}
	}
}

// Run prunes every Interval until ctx ends.
func (r *Retention) Run(ctx context.Context) {
	interval := r.Interval
	if interval <= 0 {
		interval = time.Minute
	}
	for {
		n, err := r.Prune(ctx)
		if ctx.Err() != nil {
			return
		}
		if r.Log != nil && (err != nil || n > 0) {
			r.Log.Info("usage reports past their retention deleted", slog.Int("deleted", n), slog.Any("error", err))
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(interval):
		}
	}
}
