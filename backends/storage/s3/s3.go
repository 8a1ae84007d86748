// Package s3 is the Bucket on Amazon S3 or any S3-compatible server
// (endpoint + path-style addressing), through aws-sdk-go-v2.
//
// Bodies up to one part (5 MiB by default) go up in a single PutObject;
// larger ones as a multipart upload that reads the next part from the client
// while the previous one is sent, or sends two parts at once when the server
// is slower than the client. Part buffers come from a budget shared by
// all uploads of a Bucket, so memory stays bounded however many uploads run:
// an upload holds at most two buffers (three while the budget has room),
// and waits for one when the budget is spent. They live outside the Go heap
// (see bufferPool). (The SDK's upload manager buffers part size x
// concurrency per upload with no shared bound, which is why it is not
// used.)
//
// A failed multipart upload is aborted with a context of its own, so that a
// cancelled request still cleans up; an abort that fails because the server
// is down is retried in the background until the server is back, so nothing
// is left behind once it is.
package s3

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aigateway/gateway/backends/storage/remote"
	"github.com/aigateway/gateway/files/blob"
	"github.com/aigateway/gateway/internal/telemetry"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/ratelimit"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go"
	smithyhttp "github.com/aws/smithy-go/transport/http"
	"go.uber.org/zap"
	"golang.org/x/sync/errgroup"
)

// Limits of the S3 API.
const (
	MinPartSize = 5 << 20
	maxPartSize = 5 << 30
	maxParts    = 10000
)

// Defaults of the tuning fields of Config.
const (
	DefaultPartSize       = MinPartSize
	DefaultBufferBudget   = 64 << 20
	DefaultPartTimeout    = 2 * time.Minute
	DefaultRequestTimeout = remote.DefaultRequestTimeout
	DefaultMaxAttempts    = remote.DefaultMaxAttempts
)

const (
	// orphanMaxAge is how long a failed abort is retried before the
	// upload is given up (and logged) for a lifecycle rule to collect.
	orphanMaxAge   = 24 * time.Hour
	orphanMaxDelay = time.Minute
)

// Config configures a Bucket. Credentials come from the SDK's standard chain
// (AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY, shared profiles, web identity,
// instance roles), never from the gateway's configuration file.
type Config struct {
	Bucket string
	// Region defaults to the SDK's (AWS_REGION, profile), or us-east-1 when
	// Endpoint is set.
	Region string
	// Endpoint is the base URL of an S3-compatible server; empty means AWS.
	Endpoint string
	// PathStyle addresses buckets as endpoint/bucket/key instead of
	// bucket.endpoint/key; most S3-compatible servers need it.
	PathStyle bool
	// Prefix is prepended to every key ("gateway/" keeps the gateway's
	// objects apart from others in a shared bucket).
	Prefix string

	// PartSize is the size of multipart parts and of the largest single
	// PutObject; at least MinPartSize. Default DefaultPartSize.
	PartSize int64
	// BufferBudget bounds the part buffers all uploads of the Bucket hold
	// at once; at least PartSize. Default DefaultBufferBudget.
	BufferBudget int64
	// PartTimeout bounds one part (or small object) upload, retries
	// included. Default DefaultPartTimeout.
	PartTimeout time.Duration
	// RequestTimeout bounds every other request. Default
	// DefaultRequestTimeout.
	RequestTimeout time.Duration
	// MaxAttempts is how many times a request is tried on retryable errors.
	// Default DefaultMaxAttempts.
	MaxAttempts int

	// Credentials overrides the SDK's chain; for tests and embedders only,
	// it has no configuration-file equivalent.
	Credentials aws.CredentialsProvider
}

func (c *Config) setDefaults() {
	if c.PartSize == 0 {
		c.PartSize = DefaultPartSize
	}
	if c.BufferBudget == 0 {
		c.BufferBudget = DefaultBufferBudget
	}
	if c.PartTimeout == 0 {
		c.PartTimeout = DefaultPartTimeout
	}
	remote.SetDefaults(&c.Prefix, &c.RequestTimeout, &c.MaxAttempts)
	if c.Region == "" && c.Endpoint != "" {
		c.Region = "us-east-1"
	}
}

// validate returns every problem of c, joined.
func (c *Config) validate() error {
	errs := remote.Problems("s3", c.Bucket, c.Endpoint, c.Prefix, c.MaxAttempts, c.PartTimeout, c.RequestTimeout)
	bad := func(field, problem string) {
		errs = append(errs, &blob.ConfigError{Field: "s3." + field, Problem: problem})
	}
	if c.PartSize < MinPartSize || c.PartSize > maxPartSize {
		bad("part_size", fmt.Sprintf("must be between %d and %d bytes", MinPartSize, int64(maxPartSize)))
	}
	if c.BufferBudget < c.PartSize {
		bad("buffer_budget", "must hold at least one part")
	}
	return errors.Join(errs...)
}

// Bucket stores objects in one S3 bucket under Config.Prefix. It is safe
// for concurrent use.
type Bucket struct {
	client *s3.Client
	cfg    Config
	bucket *string
	bufs   *bufferPool
	log    *zap.Logger
	closed atomic.Bool

	// Multipart uploads whose abort failed, retried by the janitor.
	mu      sync.Mutex
	orphans []orphan
	retryMu sync.Mutex // one retry pass at a time
	wake    chan struct{}
	stop    chan struct{}
	done    chan struct{}
}

type orphan struct {
	key, uploadID string
	since         time.Time
}

var (
	_ blob.Bucket  = (*Bucket)(nil)
	_ blob.Pending = (*Bucket)(nil)
)

// New validates cfg (returning every problem, each wrapping
// blob.ErrInvalidConfig) and builds the client. It does not contact the
// server: a storage outage at start-up must not stop the gateway; use Check
// for readiness. Close must be called to stop the background janitor.
func New(ctx context.Context, cfg Config, log *zap.Logger) (*Bucket, error) {
	return newBucket(ctx, cfg, log, nil)
}

// newBucket is New with the pause between the tries of a request chosen by
// backoff; nil is the SDK's exponential backoff with jitter, at most 2 s,
// which production uses. Tests pass none, to make as many tries as
// production without waiting.
func newBucket(ctx context.Context, cfg Config, log *zap.Logger, backoff retry.BackoffDelayer) (*Bucket, error) {
	cfg.setDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	// A BuildableClient, because the SDK adds AWS_CA_BUNDLE's roots to it.
	hc := awshttp.NewBuildableClient().
		WithDialerOptions(func(d *net.Dialer) { d.Timeout = 5 * time.Second }).
		WithTransportOptions(func(tr *http.Transport) {
			// Headers of a part upload arrive once its body is sent; a
			// server that takes longer than this is stuck.
			tr.ResponseHeaderTimeout = time.Minute
			tr.MaxIdleConnsPerHost = 64
		})
	opts := []func(*awsconfig.LoadOptions) error{
		awsconfig.WithHTTPClient(hc),
		awsconfig.WithRetryer(func() aws.Retryer {
			return retry.NewStandard(func(o *retry.StandardOptions) {
				o.MaxAttempts = cfg.MaxAttempts
				// An interactive upload cannot wait out the SDK's 20 s.
				o.MaxBackoff = 2 * time.Second
				if backoff != nil {
					o.Backoff = backoff
				}
			})
		}),
	}
	if cfg.Region != "" {
		opts = append(opts, awsconfig.WithRegion(cfg.Region))
	}
	if cfg.Credentials != nil {
		opts = append(opts, awsconfig.WithCredentialsProvider(cfg.Credentials))
	}
	awsCfg, err := awsconfig.LoadDefaultConfig(ctx, opts...)
	if err != nil {
		return nil, fmt.Errorf("s3: load SDK configuration: %w", err)
	}
	if awsCfg.Region == "" {
		return nil, &blob.ConfigError{Field: "s3.region", Problem: "must be set (or AWS_REGION)"}
	}
	s3client := s3.NewFromConfig(awsCfg, func(o *s3.Options) {
		if cfg.Endpoint != "" {
			o.BaseEndpoint = aws.String(cfg.Endpoint)
		}
		o.UsePathStyle = cfg.PathStyle
		if telemetry.Enabled() {
			// Over the client the configuration made (with
			// AWS_CA_BUNDLE's roots, if any).
			o.HTTPClient = newTracedClient(o.HTTPClient)
			o.APIOptions = append(o.APIOptions, traceOperations(cfg.Bucket))
		}
	})
	b := &Bucket{
		client: s3client,
		cfg:    cfg,
		bucket: aws.String(cfg.Bucket),
		bufs:   newBufferPool(cfg.PartSize, cfg.BufferBudget),
		log:    log,
		wake:   make(chan struct{}, 1),
		stop:   make(chan struct{}),
		done:   make(chan struct{}),
	}
	go b.janitor()
	return b, nil
}

func (b *Bucket) key(key string) *string { return aws.String(b.cfg.Prefix + key) }

func (b *Bucket) open() error {
	if b.closed.Load() {
		return fmt.Errorf("%w: bucket closed", blob.ErrUnavailable)
	}
	return nil
}

// Upload implements blob.Bucket.
func (b *Bucket) Upload(ctx context.Context, key string, r io.Reader, size int64, opts blob.UploadOptions) (blob.Object, error) {
	if err := blob.ValidateKey(key); err != nil {
		return blob.Object{}, err
	}
	body := blob.NewBody(r, size)
	fail := func(err error) (blob.Object, error) {
		return blob.Object{}, fmt.Errorf("s3: upload %s: %w", key, body.Cause(ctx, err))
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
	buf, err := b.bufs.get(ctx)
	if err != nil {
		return fail(err)
	}
	n, err := body.Fill(buf)
	switch {
	case err == io.EOF:
		err := b.put(ctx, key, buf[:n], contentType)
		b.bufs.put(buf)
		if err != nil {
			return fail(err)
		}
	case err != nil:
		b.bufs.put(buf)
		return fail(err)
	default:
		if err := b.multipart(ctx, key, body, buf, contentType); err != nil {
			return fail(err)
		}
	}
	return blob.Object{Key: key, Size: body.N(), ContentType: contentType, Modified: time.Now()}, nil
}

// put stores data as key in one PutObject. data may be reused once put
// returns: no request reads it any more (see partReader).
func (b *Bucket) put(ctx context.Context, key string, data []byte, contentType string) error {
	ctx, cancel := context.WithTimeout(ctx, b.cfg.PartTimeout)
	defer cancel()
	body := newPartReader(data)
	defer body.fence()
	_, err := b.client.PutObject(ctx, &s3.PutObjectInput{
		Bucket:        b.bucket,
		Key:           b.key(key),
		Body:          body,
		ContentLength: aws.Int64(int64(len(data))),
		ContentType:   aws.String(contentType),
	})
	return classifyWrite(err)
}

// multipart uploads first (a full part, owned by multipart from here on)
// and the rest of body as one multipart upload, aborting it on failure.
func (b *Bucket) multipart(ctx context.Context, key string, body *blob.Body, first []byte, contentType string) error {
	id, err := b.createMultipart(ctx, key, &s3.CreateMultipartUploadInput{
		Bucket:            b.bucket,
		Key:               b.key(key),
		ContentType:       aws.String(contentType),
		ChecksumAlgorithm: types.ChecksumAlgorithmCrc32,
	})
	if err != nil {
		b.bufs.put(first)
		return err
	}
	parts, err := b.sendParts(ctx, key, id, body, first)
	if err != nil {
		b.abort(ctx, key, id, false)
		return err
	}
	cctx, cancel := context.WithTimeout(ctx, b.cfg.RequestTimeout)
	_, err = b.client.CompleteMultipartUpload(cctx, &s3.CompleteMultipartUploadInput{
		Bucket:          b.bucket,
		Key:             b.key(key),
		UploadId:        aws.String(id),
		MultipartUpload: &types.CompletedMultipartUpload{Parts: parts},
	})
	cancel()
	if err != nil {
		b.abort(ctx, key, id, true)
		return classifyWrite(err)
	}
	return nil
}

// createMultipart starts a multipart upload and returns its id. The request
// is not cut short by ctx: the server may have made the upload before a
// cancelled request's answer arrives, and an upload whose id the gateway
// never learned would stay behind, billed, until the sweeper's grace. A
// ctx ended meanwhile aborts the upload made and is the error.
func (b *Bucket) createMultipart(ctx context.Context, key string, in *s3.CreateMultipartUploadInput) (string, error) {
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), b.cfg.RequestTimeout)
	out, err := b.client.CreateMultipartUpload(cctx, in)
	cancel()
	if err != nil {
		return "", classifyWrite(err)
	}
	id := aws.ToString(out.UploadId)
	if err := ctx.Err(); err != nil {
		b.abort(ctx, key, id, false)
		return "", err
	}
	return id, nil
}

type part struct {
	num  int32
	buf  []byte
	size int
	slot chan struct{} // the upload's slot buf holds, freed once it is sent
}

// partsInFlight is how many part buffers one upload is sure to get, and
// how many of its parts are sent at once: one part is read from the client
// while another is sent or, when the S3 server is the slower side, two are
// sent at once. While the budget has room, an upload holds one more buffer
// (spareParts), so that the next part is read while two are sent: with two
// buffers, the server had one part in flight while each was filled, and an
// upload ran at 0.85× the same parts put straight from memory two at a
// time (bench/uploads.sh).
const (
	partsInFlight = 2
	spareParts    = 1
)

// sendParts sends first and the rest of body as parts of upload id, holding
// at most partsInFlight buffers, and spareParts more while the budget has
// room: a part is read into a buffer while the parts before it are sent,
// and a sender is started per part. The first error (body, ctx, or server)
// stops them all. The parts are returned in order, as
// CompleteMultipartUpload requires.
func (b *Bucket) sendParts(ctx context.Context, key, id string, body *blob.Body, first []byte) ([]types.CompletedPart, error) {
	g, gctx := errgroup.WithContext(ctx)
	// One token per buffer this upload holds.
	sure, spare := make(chan struct{}, partsInFlight), make(chan struct{}, spareParts)
	var mu sync.Mutex
	var completed []types.CompletedPart

	sending := make(chan struct{}, partsInFlight) // a spare part waits its turn, filled
	send := func(p part) {
		g.Go(func() error {
			defer func() { b.bufs.put(p.buf); <-p.slot }()
			select {
			case sending <- struct{}{}:
				defer func() { <-sending }()
			case <-gctx.Done():
				return gctx.Err()
			}
			if err := gctx.Err(); err != nil {
				return err
			}
			// A part once started is sent to the end on a context that the
			// failure of the request or of the body does not cancel: a part
			// cut off mid-request may still be stored by the server after
			// our AbortMultipartUpload, leaving it behind (S3 documents the
			// same). PartTimeout still bounds it, and its buffer is in
			// memory, so finishing it costs little.
			cp, err := b.uploadPart(context.WithoutCancel(gctx), key, id, p, types.ChecksumAlgorithmCrc32)
			if err != nil {
				return err
			}
			mu.Lock()
			completed = append(completed, cp)
			mu.Unlock()
			return nil
		})
	}
	g.Go(func() error { // reader
		sure <- struct{}{} // first's
		p := part{num: 1, buf: first, size: len(first), slot: sure}
		for {
			last := p.size < len(p.buf)
			send(p)
			if last {
				return nil
			}
			next, slot, err := b.nextBuffer(gctx, sure, spare)
			if err != nil {
				return err
			}
			n, err := body.Fill(next)
			switch {
			case err == io.EOF && n == 0:
				b.bufs.put(next)
				<-slot
				return nil
			case err != nil && err != io.EOF:
				b.bufs.put(next)
				<-slot
				return err
			}
			if p.num+1 > maxParts {
				b.bufs.put(next)
				<-slot
				return fmt.Errorf("body needs more than %d parts of %d bytes", maxParts, b.cfg.PartSize)
			}
			p = part{num: p.num + 1, buf: next, size: n, slot: slot}
		}
	})
	if err := g.Wait(); err != nil {
		return nil, err
	}
	slices.SortFunc(completed, func(x, y types.CompletedPart) int {
		return cmp.Compare(aws.ToInt32(x.PartNumber), aws.ToInt32(y.PartNumber))
	})
	return completed, nil
}

// nextBuffer takes a buffer for an upload's next part, and the slot it
// holds: a sure slot if one is free, waiting for the budget if need be;
// else the spare, if it is free and the budget has room now (TryAcquire
// never passes an upload waiting for its sure buffer); else the first sure
// slot freed.
func (b *Bucket) nextBuffer(ctx context.Context, sure, spare chan struct{}) ([]byte, chan struct{}, error) {
	select {
	case sure <- struct{}{}:
		return b.bufferFor(ctx, sure)
	default:
	}
	select {
	case spare <- struct{}{}:
		buf, ok, err := b.bufs.tryGet()
		if ok {
			return buf, spare, nil
		}
		<-spare
		if err != nil {
			return nil, nil, err
		}
	default:
	}
	select {
	case sure <- struct{}{}:
		return b.bufferFor(ctx, sure)
	case <-ctx.Done():
		return nil, nil, ctx.Err()
	}
}

// bufferFor gets a buffer for the slot just taken, freeing it on failure.
func (b *Bucket) bufferFor(ctx context.Context, slot chan struct{}) ([]byte, chan struct{}, error) {
	buf, err := b.bufs.get(ctx)
	if err != nil {
		<-slot
		return nil, nil, err
	}
	return buf, slot, nil
}

// uploadPart sends p as part p.num of upload id, with a checksum computed
// by algo ("" for none: the upload's algorithm, chosen at its creation).
// p.buf may be reused once it returns: no request reads it any more (see
// partReader).
func (b *Bucket) uploadPart(ctx context.Context, key, id string, p part, algo types.ChecksumAlgorithm) (types.CompletedPart, error) {
	ctx, cancel := context.WithTimeout(ctx, b.cfg.PartTimeout)
	defer cancel()
	body := newPartReader(p.buf[:p.size])
	defer body.fence()
	out, err := b.client.UploadPart(ctx, &s3.UploadPartInput{
		Bucket:            b.bucket,
		Key:               b.key(key),
		UploadId:          aws.String(id),
		PartNumber:        aws.Int32(p.num),
		Body:              body,
		ContentLength:     aws.Int64(int64(p.size)),
		ChecksumAlgorithm: algo,
	})
	if err != nil {
		return types.CompletedPart{}, classifyWrite(err)
	}
	return types.CompletedPart{
		PartNumber:        aws.Int32(p.num),
		ETag:              out.ETag,
		ChecksumCRC32:     out.ChecksumCRC32,
		ChecksumCRC32C:    out.ChecksumCRC32C,
		ChecksumCRC64NVME: out.ChecksumCRC64NVME,
		ChecksumSHA1:      out.ChecksumSHA1,
		ChecksumSHA256:    out.ChecksumSHA256,
	}, nil
}

// abort aborts upload id of key with a context of its own (ctx may be the
// reason it failed); when that fails the janitor takes over. completing
// says CompleteMultipartUpload was attempted: if the upload is then gone,
// the completion may have succeeded with its answer lost, and the object it
// made is deleted, since the caller will record no file for it.
func (b *Bucket) abort(ctx context.Context, key, id string, completing bool) {
	actx, cancel := context.WithTimeout(context.WithoutCancel(ctx), b.cfg.RequestTimeout)
	defer cancel()
	gone, err := b.abortOnce(actx, key, id)
	switch {
	case err != nil:
		b.log.Warn("s3: abort of a failed multipart upload failed; retrying in the background",
			zap.String("key", key), zap.String("upload_id", id), zap.Error(err))
		b.mu.Lock()
		b.orphans = append(b.orphans, orphan{key: key, uploadID: id, since: time.Now()})
		b.mu.Unlock()
		select {
		case b.wake <- struct{}{}:
		default:
		}
	case gone && completing:
		if _, err := b.client.DeleteObject(actx, &s3.DeleteObjectInput{Bucket: b.bucket, Key: b.key(key)}); err != nil {
			b.log.Error("s3: cannot delete the object of a multipart upload whose completion failed",
				zap.String("key", key), zap.Error(err))
		}
	}
}

// abortOnce aborts upload id; gone reports that it no longer existed.
func (b *Bucket) abortOnce(ctx context.Context, key, id string) (gone bool, err error) {
	_, err = b.client.AbortMultipartUpload(ctx, &s3.AbortMultipartUploadInput{
		Bucket:   b.bucket,
		Key:      b.key(key),
		UploadId: aws.String(id),
	})
	var nsu *types.NoSuchUpload
	if errors.As(err, &nsu) {
		return true, nil
	}
	return false, classify(err)
}

// janitor retries failed aborts with exponential backoff until Close.
func (b *Bucket) janitor() {
	defer close(b.done)
	delay := time.Second
	timer := time.NewTimer(delay)
	timer.Stop()
	for {
		select {
		case <-b.stop:
			timer.Stop()
			return
		case <-b.wake:
		case <-timer.C:
		}
		if left := b.retryOrphans(context.Background()); left > 0 {
			timer.Reset(delay)
			delay = min(2*delay, orphanMaxDelay)
		} else {
			delay = time.Second
		}
	}
}

// retryOrphans makes one attempt at every pending abort and returns how
// many are still pending.
func (b *Bucket) retryOrphans(ctx context.Context) int {
	b.retryMu.Lock()
	defer b.retryMu.Unlock()
	b.mu.Lock()
	todo := b.orphans
	b.orphans = nil
	b.mu.Unlock()

	var left []orphan
	for _, o := range todo {
		actx, cancel := context.WithTimeout(ctx, b.cfg.RequestTimeout)
		_, err := b.abortOnce(actx, o.key, o.uploadID)
		cancel()
		switch {
		case err == nil:
			b.log.Info("s3: aborted a multipart upload left by a failed upload",
				zap.String("key", o.key), zap.String("upload_id", o.uploadID))
		case time.Since(o.since) > orphanMaxAge:
			b.log.Error("s3: giving up aborting a multipart upload; a lifecycle rule must collect it",
				zap.String("key", o.key), zap.String("upload_id", o.uploadID), zap.Error(err))
		default:
			left = append(left, o)
		}
	}
	b.mu.Lock()
	b.orphans = append(b.orphans, left...)
	n := len(b.orphans)
	b.mu.Unlock()
	return n
}

// Open implements blob.Bucket.
func (b *Bucket) Open(ctx context.Context, key string) (io.ReadCloser, error) {
	if err := blob.ValidateKey(key); err != nil {
		return nil, err
	}
	if err := b.open(); err != nil {
		return nil, fmt.Errorf("s3: open %s: %w", key, err)
	}
	out, err := b.client.GetObject(ctx, &s3.GetObjectInput{Bucket: b.bucket, Key: b.key(key)})
	if err != nil {
		return nil, fmt.Errorf("s3: open %s: %w", key, classify(err))
	}
	return out.Body, nil
}

// OpenRange implements blob.Bucket with an HTTP Range request.
func (b *Bucket) OpenRange(ctx context.Context, key string, offset, length int64) (io.ReadCloser, error) {
	if err := blob.ValidateKey(key); err != nil {
		return nil, err
	}
	if offset < 0 || length < 1 {
		return nil, fmt.Errorf("s3: open %s: invalid range %d+%d", key, offset, length)
	}
	if err := b.open(); err != nil {
		return nil, fmt.Errorf("s3: open %s: %w", key, err)
	}
	out, err := b.client.GetObject(ctx, &s3.GetObjectInput{
		Bucket: b.bucket, Key: b.key(key), Range: aws.String(fmt.Sprintf("bytes=%d-%d", offset, offset+length-1)),
	})
	if err != nil {
		return nil, fmt.Errorf("s3: open %s: %w", key, classify(err))
	}
	return out.Body, nil
}

// Stat implements blob.Bucket.
func (b *Bucket) Stat(ctx context.Context, key string) (blob.Object, error) {
	if err := blob.ValidateKey(key); err != nil {
		return blob.Object{}, err
	}
	if err := b.open(); err != nil {
		return blob.Object{}, fmt.Errorf("s3: stat %s: %w", key, err)
	}
	ctx, cancel := context.WithTimeout(ctx, b.cfg.RequestTimeout)
	defer cancel()
	out, err := b.client.HeadObject(ctx, &s3.HeadObjectInput{Bucket: b.bucket, Key: b.key(key)})
	if err != nil {
		return blob.Object{}, fmt.Errorf("s3: stat %s: %w", key, classify(err))
	}
	return blob.Object{
		Key:         key,
		Size:        aws.ToInt64(out.ContentLength),
		ContentType: aws.ToString(out.ContentType),
		Modified:    aws.ToTime(out.LastModified),
	}, nil
}

// Delete implements blob.Bucket.
func (b *Bucket) Delete(ctx context.Context, key string) error {
	if err := blob.ValidateKey(key); err != nil {
		return err
	}
	if err := b.open(); err != nil {
		return fmt.Errorf("s3: delete %s: %w", key, err)
	}
	ctx, cancel := context.WithTimeout(ctx, b.cfg.RequestTimeout)
	defer cancel()
	_, err := b.client.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: b.bucket, Key: b.key(key)})
	if err := classify(err); err != nil && !errors.Is(err, blob.ErrNotFound) {
		return fmt.Errorf("s3: delete %s: %w", key, err)
	}
	return nil
}

// List implements blob.Bucket.
func (b *Bucket) List(ctx context.Context, prefix string) ([]string, error) {
	if err := b.open(); err != nil {
		return nil, fmt.Errorf("s3: list %q: %w", prefix, err)
	}
	p := s3.NewListObjectsV2Paginator(b.client, &s3.ListObjectsV2Input{Bucket: b.bucket, Prefix: b.key(prefix)})
	var keys []string
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return nil, fmt.Errorf("s3: list %q: %w", prefix, classify(err))
		}
		for _, o := range page.Contents {
			k := strings.TrimPrefix(aws.ToString(o.Key), b.cfg.Prefix)
			if strings.HasSuffix(k, "/") {
				continue // a directory marker some servers report
			}
			keys = append(keys, k)
		}
	}
	return keys, nil
}

// ListAfter implements blob.Bucket with one ListObjectsV2 request per
// page (S3 orders keys by their bytes, as Go compares strings).
func (b *Bucket) ListAfter(ctx context.Context, prefix, after string, limit int) ([]string, error) {
	if err := b.open(); err != nil {
		return nil, fmt.Errorf("s3: list %q after %q: %w", prefix, after, err)
	}
	in := &s3.ListObjectsV2Input{Bucket: b.bucket, Prefix: b.key(prefix), MaxKeys: aws.Int32(int32(min(limit, 1000)))}
	if after != "" {
		in.StartAfter = b.key(after)
	}
	var keys []string
	p := s3.NewListObjectsV2Paginator(b.client, in)
	for p.HasMorePages() && len(keys) < limit {
		page, err := p.NextPage(ctx)
		if err != nil {
			return nil, fmt.Errorf("s3: list %q after %q: %w", prefix, after, classify(err))
		}
		for _, o := range page.Contents {
			k := strings.TrimPrefix(aws.ToString(o.Key), b.cfg.Prefix)
			if !strings.HasSuffix(k, "/") && len(keys) < limit {
				keys = append(keys, k)
			}
		}
	}
	return keys, nil
}

// PendingUploads implements blob.Pending: the multipart uploads in
// progress under the prefix, as "key upload-id".
func (b *Bucket) PendingUploads(ctx context.Context) ([]string, error) {
	if err := b.open(); err != nil {
		return nil, fmt.Errorf("s3: list multipart uploads: %w", err)
	}
	p := s3.NewListMultipartUploadsPaginator(b.client, &s3.ListMultipartUploadsInput{Bucket: b.bucket, Prefix: b.key("")})
	var out []string
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return nil, fmt.Errorf("s3: list multipart uploads: %w", classify(err))
		}
		for _, u := range page.Uploads {
			out = append(out, strings.TrimPrefix(aws.ToString(u.Key), b.cfg.Prefix)+" "+aws.ToString(u.UploadId))
		}
	}
	return out, nil
}

// AbortPending implements blob.Pending: the multipart uploads
// under the prefix initiated before before.
func (b *Bucket) AbortPending(ctx context.Context, before time.Time, limit int) (int, error) {
	if err := b.open(); err != nil {
		return 0, fmt.Errorf("s3: abort pending: %w", err)
	}
	p := s3.NewListMultipartUploadsPaginator(b.client, &s3.ListMultipartUploadsInput{Bucket: b.bucket, Prefix: b.key("")})
	removed := 0
	for p.HasMorePages() && removed < limit {
		page, err := p.NextPage(ctx)
		if err != nil {
			return removed, fmt.Errorf("s3: list multipart uploads: %w", classify(err))
		}
		for _, u := range page.Uploads {
			if removed >= limit {
				break
			}
			if u.Initiated == nil || !u.Initiated.Before(before) {
				continue
			}
			key := strings.TrimPrefix(aws.ToString(u.Key), b.cfg.Prefix)
			if _, err := b.abortOnce(ctx, key, aws.ToString(u.UploadId)); err != nil {
				return removed, fmt.Errorf("s3: abort multipart upload of %s: %w", key, err)
			}
			removed++
		}
	}
	return removed, nil
}

// Check implements blob.Bucket with HeadBucket.
func (b *Bucket) Check(ctx context.Context) error {
	if err := b.open(); err != nil {
		return fmt.Errorf("s3: check: %w", err)
	}
	ctx, cancel := context.WithTimeout(ctx, b.cfg.RequestTimeout)
	defer cancel()
	if _, err := b.client.HeadBucket(ctx, &s3.HeadBucketInput{Bucket: b.bucket}); err != nil {
		return fmt.Errorf("s3: check bucket %s: %w", b.cfg.Bucket, classify(err))
	}
	return nil
}

// Close stops the janitor after one last attempt at the aborts it still
// holds (logged when they fail). Later calls of other methods fail with
// ErrUnavailable; uploads already running carry on.
func (b *Bucket) Close() error {
	if b.closed.Swap(true) {
		return nil
	}
	close(b.stop)
	<-b.done
	b.bufs.close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if left := b.retryOrphans(ctx); left > 0 {
		b.mu.Lock()
		for _, o := range b.orphans {
			b.log.Error("s3: multipart upload left behind at close; a lifecycle rule must collect it",
				zap.String("key", o.key), zap.String("upload_id", o.uploadID))
		}
		b.mu.Unlock()
	}
	return nil
}

// classify and classifyWrite map this client's errors to the backends
// sentinels.
func classify(err error) error      { return blob.Classify(err, sentinel) }
func classifyWrite(err error) error { return blob.ClassifyWrite(err, sentinel) }

func sentinel(err error) error {
	var (
		noBucket *types.NoSuchBucket
		noKey    *types.NoSuchKey
		notFound *types.NotFound
		api      smithy.APIError
		resp     *smithyhttp.ResponseError
		send     *smithyhttp.RequestSendError
		quota    *ratelimit.QuotaExceededError
	)
	switch {
	case errors.As(err, &noBucket):
		return nil // misconfiguration: internal
	case errors.As(err, &noKey), errors.As(err, &notFound):
		return blob.ErrNotFound
	}
	if errors.As(err, &api) {
		switch api.ErrorCode() {
		case "NoSuchKey", "NotFound":
			return blob.ErrNotFound
		case "AccessDenied", "Forbidden", "InvalidAccessKeyId", "SignatureDoesNotMatch",
			"AccountProblem", "AllAccessDisabled", "ExpiredToken", "InvalidToken":
			return blob.ErrAccessDenied
		case "SlowDown", "ServiceUnavailable", "InternalError", "RequestTimeout",
			"Throttling", "ThrottlingException", "TooManyRequests":
			return blob.ErrUnavailable
		}
	}
	if errors.As(err, &resp) {
		if s := remote.StatusError(resp.HTTPStatusCode()); s != nil {
			return s
		}
	}
	if errors.As(err, &send) || errors.As(err, &quota) || remote.Unreachable(err) {
		return blob.ErrUnavailable
	}
	return nil
}
