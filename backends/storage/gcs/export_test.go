package gcs

import (
	"context"
	"sync"
	"time"

	"github.com/googleapis/gax-go/v2"
	"go.uber.org/zap"
)

// CrashMidCompose does what Compose does up to the first step of
// intermediates, and stops there as a dying process would: the
// intermediates stay.
func (b *Bucket) CrashMidCompose(ctx context.Context, dst string, srcs []string) error {
	run, err := composeRun()
	if err != nil {
		return err
	}
	names := make([]string, len(srcs))
	for i, src := range srcs {
		names[i] = b.name(src)
	}
	_, err = b.composeStep(ctx, run, 0, names, srcs)
	return err
}

// NewWithoutWaits is New for tests of a failing server: a nanosecond's
// pause between the tries of a request, and an upload's streak of failures
// timed by a clock that moves a quarter of ChunkRetryDeadline at each
// failure, so that an upload gives up after its fifth try rather than after
// ChunkRetryDeadline of real time. Which errors are retried, and how they
// are reported, is production's.
func NewWithoutWaits(ctx context.Context, cfg Config, log *zap.Logger) (*Bucket, error) {
	withDefaults := cfg
	withDefaults.setDefaults()
	return newBucket(ctx, cfg, log, pacing{
		backoff: gax.Backoff{Initial: time.Nanosecond, Max: time.Nanosecond, Multiplier: 1},
		now:     steppingClock(withDefaults.ChunkRetryDeadline / 4),
	})
}

// steppingClock returns a clock that moves by step at each reading.
func steppingClock(step time.Duration) func() time.Time {
	var mu sync.Mutex
	t := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	return func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		t = t.Add(step)
		return t
	}
}
