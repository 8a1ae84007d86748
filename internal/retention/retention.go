// Package retention deletes what has outlived its retention, in the
// background and in short batches: each batch is one short transaction of
// the store, so the database's writer (SQLite's only one) is held a few
// milliseconds at a time and the writes of requests pass in between.
package retention

import (
	"context"
	"log/slog"
	"time"
)

// Defaults of a Loop.
const (
	DefaultBatch    = 1000
	DefaultInterval = time.Minute
	DefaultPause    = 10 * time.Millisecond
)

// PruneFunc deletes at most limit rows older than cutoff and returns how
// many it deleted; fewer than limit means none is left.
type PruneFunc func(ctx context.Context, cutoff time.Time, limit int) (int, error)

// Loop deletes, every Interval, whatever Prune finds older than Keep.
type Loop struct {
	// What names the rows in the log ("usage reports").
	What  string
	Prune PruneFunc
	// Keep is how long a row is kept.
	Keep time.Duration
	// Batch bounds the rows deleted a transaction (DefaultBatch when not
	// positive).
	Batch int
	// Interval between passes once nothing is left to delete
	// (DefaultInterval when not positive).
	Interval time.Duration
	// Pause between two full batches of one pass (DefaultPause when not
	// positive).
	Pause time.Duration
	Log   *slog.Logger
	// Now is the clock (time.Now when nil).
	Now func() time.Time
}

// Pass deletes, batch after batch, every row older than Keep, and returns
// how many it deleted. It stops at the first error or when ctx ends.
func (l *Loop) Pass(ctx context.Context) (int, error) {
	batch := l.Batch
	if batch <= 0 {
		batch = DefaultBatch
	}
	pause := l.Pause
	if pause <= 0 {
		pause = DefaultPause
	}
	now := time.Now
	if l.Now != nil {
		now = l.Now
	}
	// One cutoff for the whole pass: rows coming of age meanwhile wait for
	// the next, so a pass always ends.
	cutoff := now().Add(-l.Keep)
	total := 0
	for {
		n, err := l.Prune(ctx, cutoff, batch)
		total += n
		if err != nil || n < batch {
			return total, err
		}
		select {
		case <-ctx.Done():
			return total, ctx.Err()
		case <-time.After(pause):
		}
	}
}

// Run makes a pass every Interval until ctx ends, logging the passes that
// deleted something or failed. A failed pass (the database down) is tried
// again at the next interval.
func (l *Loop) Run(ctx context.Context) {
	interval := l.Interval
	if interval <= 0 {
		interval = DefaultInterval
	}
	for {
		n, err := l.Pass(ctx)
		if ctx.Err() != nil {
			return
		}
		if l.Log != nil && (err != nil || n > 0) {
			l.Log.Info(l.What+" past their retention deleted", slog.Int("deleted", n), slog.Any("error", err))
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(interval):
		}
	}
}
