package spend

import (
	"context"
	"log/slog"
	"time"

	"github.com/aigateway/gateway/internal/retention"
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
// milliseconds, letting the reports being recorded in between (see
// retention.Loop, which does the work).
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

func (r *Retention) loop() *retention.Loop {
	return &retention.Loop{
		What: "usage reports", Prune: r.Store.PruneReports, Keep: RawRetention,
		Batch: r.Batch, Interval: r.Interval, Pause: r.Pause, Log: r.Log, Now: r.now,
	}
}

// Prune deletes, batch after batch, every raw report older than
// RawRetention, and returns how many it deleted.
func (r *Retention) Prune(ctx context.Context) (int, error) { return r.loop().Pass(ctx) }

// Run prunes every Interval until ctx ends.
func (r *Retention) Run(ctx context.Context) { r.loop().Run(ctx) }
