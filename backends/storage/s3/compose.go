package s3

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aigateway/gateway/files/blob"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"golang.org/x/sync/errgroup"
)

const (
	// maxCopySize is the largest range one UploadPartCopy may copy.
	maxCopySize = 5 << 30
	// composeParallel bounds the parts one Compose sends at once.
	composeParallel = 8
	// headParallel bounds the HEADs of its sources in flight: small
	// requests, up to 10,000 of them before the first part can start.
	headParallel = 32
	// copyRate is the slowest server-side copy a part is given time for,
	// on top of PartTimeout: a 5 GiB copy gets about five more minutes.
	copyRate = 16 << 20
)

// segment is the bytes [off, off+n) of the source src (an index into the
// sources of a Compose).
type segment struct {
	src    int
	off, n int64
}

// composePart is one part of the multipart upload of a Compose: either one
// segment that the server copies (UploadPartCopy), or segments read by the
// gateway into one buffer and sent as an UploadPart.
type composePart struct {
	num  int32
	copy bool
	segs []segment
	size int64
}

// planParts cuts the concatenation of sources of the given sizes into
// parts that obey S3's rules: every part but the last at least minPart
// bytes, a copied range at most maxCopy. A source of at least minPart
// bytes is copied by the server; smaller ones are joined into streamed
// parts of at most maxStream bytes (the size of a part buffer, at least
// minPart). A streamed part that a large source follows is filled to
// minPart from that source's head, and the rest of the large source is
// copied, so the gateway carries at most minPart bytes per large source.
func planParts(sizes []int64, minPart, maxCopy, maxStream int64) []composePart {
	var parts []composePart
	var run composePart
	emit := func(p composePart) {
		p.num = int32(len(parts) + 1)
		parts = append(parts, p)
	}
	for i, size := range sizes {
		for off := int64(0); off < size; {
			rest := size - off
			if run.size == 0 && rest >= minPart {
				// Equal ranges, each within maxCopy and so above minPart.
				n := (rest + maxCopy - 1) / maxCopy
				for k := range n {
					from, to := off+rest*k/n, off+rest*(k+1)/n
					emit(composePart{copy: true, segs: []segment{{i, from, to - from}}, size: to - from})
				}
				off = size
				continue
			}
			take := min(rest, maxStream-run.size)
			if rest >= minPart {
				take = minPart - run.size
			}
			run.segs = append(run.segs, segment{i, off, take})
			run.size += take
			off += take
			if run.size >= minPart {
				emit(run)
				run = composePart{}
			}
		}
	}
	if run.size > 0 {
		emit(run)
	}
	return parts
}

// Compose implements blob.Bucket as a multipart upload of dst whose parts
// the server copies from the sources (UploadPartCopy), so the bytes of
// sources of 5 MiB or more never pass through the gateway. S3 refuses a
// part under 5 MiB unless it is the last, so runs of smaller sources are
// read by the gateway, joined into part buffers taken from the Bucket's
// shared budget, and sent as ordinary parts (see planParts). A Compose
// whose sources fit one buffer is a single PutObject.
//
// The multipart upload is aborted on any failure, as Upload's is; one
// left by a crash is a pending upload that AbortPending removes.
func (b *Bucket) Compose(ctx context.Context, dst string, srcs []string, opts blob.UploadOptions) (blob.Object, error) {
	if err := blob.ValidateCompose(dst, srcs); err != nil {
		return blob.Object{}, err
	}
	fail := func(err error) (blob.Object, error) {
		return blob.Object{}, fmt.Errorf("s3: compose %s: %w", dst, blob.ContextCause(ctx, err))
	}
	if err := b.open(); err != nil {
		return fail(err)
	}
	if err := ctx.Err(); err != nil {
		return fail(err)
	}
	contentType := opts.ContentType
	if contentType == "" {
		contentType = "application/octet-stream"
	}
	sizes, err := b.sourceSizes(ctx, srcs)
	if err != nil {
		return fail(err)
	}
	parts := planParts(sizes, MinPartSize, maxCopySize, b.cfg.PartSize)
	if len(parts) > maxParts {
		return fail(fmt.Errorf("%w: the sources need %d parts, more than S3's %d", blob.ErrInvalidCompose, len(parts), maxParts))
	}
	var total int64
	for _, s := range sizes {
		total += s
	}
	if len(parts) == 0 || (len(parts) == 1 && !parts[0].copy) {
		err = b.composeSmall(ctx, dst, srcs, parts, contentType)
	} else {
		err = b.composeMultipart(ctx, dst, srcs, parts, contentType)
	}
	if err != nil {
		return fail(err)
	}
	return blob.Object{Key: dst, Size: total, ContentType: contentType, Modified: time.Now()}, nil
}

// sourceSizes returns the size of every source, a few HEADs at a time. A
// missing source is a *blob.MissingSourceError; when several fail, the
// error of the first in srcs (of those tried) is returned.
func (b *Bucket) sourceSizes(ctx context.Context, srcs []string) ([]int64, error) {
	sizes := make([]int64, len(srcs))
	errs := make([]error, len(srcs))
	var failed atomic.Bool
	var g errgroup.Group
	g.SetLimit(headParallel)
	for i, src := range srcs {
		if failed.Load() || ctx.Err() != nil {
			break
		}
		g.Go(func() error {
			hctx, cancel := context.WithTimeout(ctx, b.cfg.RequestTimeout)
			defer cancel()
			out, err := b.client.HeadObject(hctx, &s3.HeadObjectInput{Bucket: b.bucket, Key: b.key(src)})
			if err != nil {
				errs[i] = b.sourceError(src, err)
				failed.Store(true)
				return nil
			}
			sizes[i] = aws.ToInt64(out.ContentLength)
			return nil
		})
	}
	g.Wait()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	return sizes, nil
}

// sourceError classifies err, the failure of a request reading src; a
// missing object is a *blob.MissingSourceError.
func (b *Bucket) sourceError(src string, err error) error {
	err = classify(err)
	if errors.Is(err, blob.ErrNotFound) {
		return &blob.MissingSourceError{Key: src}
	}
	return err
}

// composeSmall stores the sources, which fit one part buffer, with one
// PutObject.
func (b *Bucket) composeSmall(ctx context.Context, dst string, srcs []string, parts []composePart, contentType string) error {
	buf, err := b.bufs.get(ctx)
	if err != nil {
		return err
	}
	defer b.bufs.put(buf)
	n := 0
	if len(parts) == 1 {
		if err := b.readSegments(ctx, buf, srcs, parts[0].segs); err != nil {
			return err
		}
		n = int(parts[0].size)
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	// Once sent, the object may appear: the request is not cut short by
	// ctx, so its answer tells whether it did.
	return b.put(context.WithoutCancel(ctx), dst, buf[:n], contentType)
}

// readSegments reads segs of srcs, one ranged GET each, into buf.
func (b *Bucket) readSegments(ctx context.Context, buf []byte, srcs []string, segs []segment) error {
	var pos int64
	for _, s := range segs {
		src := srcs[s.src]
		out, err := b.client.GetObject(ctx, &s3.GetObjectInput{
			Bucket: b.bucket,
			Key:    b.key(src),
			Range:  aws.String(fmt.Sprintf("bytes=%d-%d", s.off, s.off+s.n-1)),
		})
		if err != nil {
			return b.sourceError(src, err)
		}
		n, err := io.ReadFull(out.Body, buf[pos:pos+s.n])
		out.Body.Close()
		if err != nil {
			if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
				// Shorter than its HEAD said: replaced while composing.
				return fmt.Errorf("source %s changed while composing: %d of %d bytes at %d", src, n, s.n, s.off)
			}
			return classify(err)
		}
		pos += s.n
	}
	return nil
}

// composeMultipart stores parts as one multipart upload of dst, aborting
// it on any failure.
func (b *Bucket) composeMultipart(ctx context.Context, dst string, srcs []string, parts []composePart, contentType string) error {
	id, err := b.createMultipart(ctx, dst, &s3.CreateMultipartUploadInput{
		Bucket:      b.bucket,
		Key:         b.key(dst),
		ContentType: aws.String(contentType),
	})
	if err != nil {
		return err
	}
	completed, err := b.composeParts(ctx, dst, id, srcs, parts)
	if err == nil {
		// Last chance to honour a cancellation: once completion is asked
		// for, the object may appear.
		err = ctx.Err()
	}
	if err != nil {
		b.abort(ctx, dst, id, false)
		return err
	}
	// Not cut short by ctx: an answer lost to a cancellation would leave
	// the outcome unknown.
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), b.cfg.RequestTimeout)
	_, err = b.client.CompleteMultipartUpload(cctx, &s3.CompleteMultipartUploadInput{
		Bucket:          b.bucket,
		Key:             b.key(dst),
		UploadId:        aws.String(id),
		MultipartUpload: &types.CompletedMultipartUpload{Parts: completed},
	})
	cancel()
	if err != nil {
		b.abort(ctx, dst, id, true)
		return classifyWrite(err)
	}
	return nil
}

// composeParts sends every part of upload id, composeParallel at a time,
// and returns them in order. The first failure stops the parts not yet
// started; a part once started runs to its end on a context ctx does not
// cancel, for the reason sendParts gives.
func (b *Bucket) composeParts(ctx context.Context, dst, id string, srcs []string, parts []composePart) ([]types.CompletedPart, error) {
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(composeParallel)
	completed := make([]types.CompletedPart, len(parts))
	var mu sync.Mutex
	for i, p := range parts {
		if gctx.Err() != nil {
			break
		}
		g.Go(func() error {
			if err := gctx.Err(); err != nil {
				return err
			}
			var cp types.CompletedPart
			var err error
			if p.copy {
				cp, err = b.copyPart(context.WithoutCancel(gctx), dst, id, srcs, p)
			} else {
				cp, err = b.streamPart(gctx, dst, id, srcs, p)
			}
			if err != nil {
				return err
			}
			mu.Lock()
			completed[i] = cp
			mu.Unlock()
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return completed, nil
}

// copyPart has the server copy the one segment of p into part p.num.
func (b *Bucket) copyPart(ctx context.Context, dst, id string, srcs []string, p composePart) (types.CompletedPart, error) {
	s := p.segs[0]
	src := srcs[s.src]
	ctx, cancel := context.WithTimeout(ctx, b.cfg.PartTimeout+time.Duration(s.n/copyRate)*time.Second)
	defer cancel()
	out, err := b.client.UploadPartCopy(ctx, &s3.UploadPartCopyInput{
		Bucket:          b.bucket,
		Key:             b.key(dst),
		UploadId:        aws.String(id),
		PartNumber:      aws.Int32(p.num),
		CopySource:      aws.String(b.copySource(src)),
		CopySourceRange: aws.String(fmt.Sprintf("bytes=%d-%d", s.off, s.off+s.n-1)),
	})
	if err != nil {
		return types.CompletedPart{}, b.sourceError(src, err)
	}
	r := out.CopyPartResult
	if r == nil {
		return types.CompletedPart{}, fmt.Errorf("copy of %s into part %d: no result", src, p.num)
	}
	return types.CompletedPart{
		PartNumber:        aws.Int32(p.num),
		ETag:              r.ETag,
		ChecksumCRC32:     r.ChecksumCRC32,
		ChecksumCRC32C:    r.ChecksumCRC32C,
		ChecksumCRC64NVME: r.ChecksumCRC64NVME,
		ChecksumSHA1:      r.ChecksumSHA1,
		ChecksumSHA256:    r.ChecksumSHA256,
	}, nil
}

// streamPart reads the segments of p into a part buffer and sends it as
// part p.num. Reading stops with ctx; the send, once started, does not.
func (b *Bucket) streamPart(ctx context.Context, dst, id string, srcs []string, p composePart) (types.CompletedPart, error) {
	buf, err := b.bufs.get(ctx)
	if err != nil {
		return types.CompletedPart{}, err
	}
	defer b.bufs.put(buf)
	if err := b.readSegments(ctx, buf, srcs, p.segs); err != nil {
		return types.CompletedPart{}, err
	}
	if err := ctx.Err(); err != nil {
		return types.CompletedPart{}, err
	}
	cp, err := b.uploadPart(context.WithoutCancel(ctx), dst, id, part{num: p.num, buf: buf, size: int(p.size)}, "")
	// The upload was created without a checksum algorithm, as copied
	// parts carry none; a checksum the SDK added to this part on its own
	// would make the completion refuse it.
	return types.CompletedPart{PartNumber: cp.PartNumber, ETag: cp.ETag}, err
}

// copySource is the x-amz-copy-source of key: the bucket and the whole
// object name, each path segment escaped.
func (b *Bucket) copySource(key string) string {
	segs := strings.Split(b.cfg.Prefix+key, "/")
	for i, s := range segs {
		segs[i] = url.PathEscape(s)
	}
	return b.cfg.Bucket + "/" + strings.Join(segs, "/")
}
