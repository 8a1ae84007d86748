package s3

import (
	"context"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"go.uber.org/zap"
)

// CrashMidCompose does what Compose does up to the completion of its
// multipart upload (every part copied or sent) and stops there as a dying
// process would: the multipart upload stays.
func (b *Bucket) CrashMidCompose(ctx context.Context, dst string, srcs []string) error {
	sizes, err := b.sourceSizes(ctx, srcs)
	if err != nil {
		return err
	}
	out, err := b.client.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: b.bucket, Key: b.key(dst)})
	if err != nil {
		return err
	}
	_, err = b.composeParts(ctx, dst, aws.ToString(out.UploadId), srcs, planParts(sizes, MinPartSize, maxCopySize, b.cfg.PartSize))
	return err
}

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
