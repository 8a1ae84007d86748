package audit

import (
	"context"
	"log/slog"
	"time"

	"github.com/aigateway/gateway/internal/retention"
)

// Pruner deletes old entries; Store is one.
type Pruner interface {
	// PruneAudit deletes at most limit entries older than cutoff, in one
	// short transaction, and returns how many it deleted.
	PruneAudit(ctx context.Context, cutoff time.Time, limit int) (int, error)
}

// Retention deletes entries older than Keep in the background, in batches
// small enough that each transaction holds the database's writer a few
// milliseconds, as the usage reports' retention does (retention.Loop).
// Every replica may run one: two deleting the same old entries only
// delete fewer each.
type Retention struct {
	Store Pruner
	// Keep is how long an entry is kept (DefaultRetention when not
	// positive): the configuration's audit.retention.
	Keep time.Duration
	// Batch bounds the entries deleted a transaction (default 1,000).
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
	keep := r.Keep
	if keep <= 0 {
		keep = DefaultRetention
	}
	return &retention.Loop{
		What: "audit entries", Prune: r.Store.PruneAudit, Keep: keep,
		Batch: r.Batch, Interval: r.Interval, Pause: r.Pause, Log: r.Log, Now: r.now,
	}
}

// Prune deletes, batch after batch, every entry older than Keep, and
// returns how many it deleted.
func (r *Retention) Prune(ctx context.Context) (int, error) { return r.loop().Pass(ctx) }

// Run prunes every Interval until ctx ends.
func (r *Retention) Run(ctx context.Context) { r.loop().Run(ctx) }
