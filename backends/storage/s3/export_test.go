package s3

import "context"

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
