package s3

import (
	"context"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"go.uber.org/zap"
)

// NewWithoutBackoff is New with no pause between the tries of a request:
// the same tries, and the same errors, as production, without the wait.
func NewWithoutBackoff(ctx context.Context, cfg Config, log *zap.Logger) (*Bucket, error) {
	return newBucket(ctx, cfg, log, retry.BackoffDelayerFunc(func(int, error) (time.Duration, error) { return 0, nil }))
}

// RetryOrphans makes one synchronous pass over the failed aborts, as the
// janitor does in the background, and returns how many are left.
func (b *Bucket) RetryOrphans(ctx context.Context) int { return b.retryOrphans(ctx) }

// OrphanCount is the number of failed aborts waiting for a retry.
func (b *Bucket) OrphanCount() int {
	b.retryMu.Lock()
	defer b.retryMu.Unlock()
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.orphans)
}

// PeakBufferBytes is the most part-buffer memory held at once.
func (b *Bucket) PeakBufferBytes() int64 { return b.bufs.peak.Load() }

// BufferBytesInUse is the part-buffer memory held now.
func (b *Bucket) BufferBytesInUse() int64 { return b.bufs.inUse.Load() }
