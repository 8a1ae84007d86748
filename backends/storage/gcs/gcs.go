// Package gcs is the Bucket on Google Cloud Storage (or its emulator),
// through cloud.google.com/go/gstorage.
//
// An upload streams into a gstorage.Writer: bodies up to one chunk go up in
// a single request at Close, larger ones as a resumable upload, one chunk at
// a time. The writer buffers one chunk, so ChunkSize bounds an upload's
// memory. GCS creates the object only when the upload is finalized; on any
// failure the writer's context is cancelled before that, so nothing is
// created and a previous object under the key is kept.
package gcs

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	gstorage "cloud.google.com/go/storage"
	"github.com/googleapis/gax-go/v2"
	"go.uber.org/zap"
	"google.golang.org/api/googleapi"
	"google.golang.org/api/iterator"
	"google.golang.org/api/option"

	"github.com/aigateway/gateway/backends/storage/remote"
	"github.com/aigateway/gateway/files/blob"
)

// Defaults of the tuning fields of Config.
const (
	DefaultChunkSize            = 4 << 20
	DefaultChunkRetryDeadline   = 32 * time.Second
	DefaultChunkTransferTimeout = time.Minute
	DefaultRequestTimeout       = remote.DefaultRequestTimeout
	DefaultMaxAttempts          = remote.DefaultMaxAttempts
	chunkGranularity            = 256 << 10
	copyBufSize                 = 256 << 10
)

// Config configures a Bucket.
type Config struct {
	Bucket string
	// Endpoint overrides the JSON API endpoint, e.g.
	// http://127.0.0.1:4443/storage/v1/ for an emulator. An http:// endpoint
	// is taken to be an emulator: requests carry no credentials (they would
	// travel in clear text) and reads use the JSON API. With an https://
	// endpoint or none, Application Default Credentials are used.
	Endpoint string
	// Prefix is prepended to every key.
	Prefix string

	// ChunkSize is the resumable-upload chunk, buffered once per upload: a
	// positive multiple of 256 KiB. Default DefaultChunkSize.
	ChunkSize int
	// ChunkRetryDeadline bounds how long an upload retries a run of
	// failures, of a chunk or of any other request. Default
	// DefaultChunkRetryDeadline.
	ChunkRetryDeadline time.Duration
	// ChunkTransferTimeout abandons (and retries) a chunk whose transfer
	// stalls. Default DefaultChunkTransferTimeout.
	ChunkTransferTimeout time.Duration
	// RequestTimeout bounds Stat, Delete and Check, retries included.
	// Default DefaultRequestTimeout.
	RequestTimeout time.Duration
	// MaxAttempts bounds the tries of a request other than an upload chunk
	// (the library otherwise retries until the context ends). Default
	// DefaultMaxAttempts.
	MaxAttempts int
}

func (c *Config) setDefaults() {
	if c.ChunkSize == 0 {
		c.ChunkSize = DefaultChunkSize
	}
	if c.ChunkRetryDeadline == 0 {
		c.ChunkRetryDeadline = DefaultChunkRetryDeadline
	}
	if c.ChunkTransferTimeout == 0 {
		c.ChunkTransferTimeout = DefaultChunkTransferTimeout
	}
	remote.SetDefaults(&c.Prefix, &c.RequestTimeout, &c.MaxAttempts)
}

// validate returns every problem of c, joined.
func (c *Config) validate() error {
	errs := remote.Problems("gcs", c.Bucket, c.Endpoint, c.Prefix, c.MaxAttempts,
		c.ChunkRetryDeadline, c.ChunkTransferTimeout, c.RequestTimeout)
	if c.ChunkSize <= 0 || c.ChunkSize%chunkGranularity != 0 {
		errs = append(errs, &blob.ConfigError{Field: "gcs.chunk_size", Problem: "must be a positive multiple of 256 KiB"})
	}
	return errors.Join(errs...)
}

// Bucket stores objects in one GCS bucket under Config.Prefix. It is safe
// for concurrent use.
type Bucket struct {
	client *gstorage.Client
	cfg    Config
	// reads retries idempotent operations; writes retries uploads too,
	// which is safe here: retrying an unconditional write of the same bytes
	// yields the same object.
	reads, writes *gstorage.BucketHandle
	now           func() time.Time // times an upload's retry streak
	log           *zap.Logger
	closed        atomic.Bool
}

// pacing is how a Bucket waits between the tries of a request: the
// library's backoff, and the clock that times an upload's streak of
// failures (retryStreak). Production's is defaultPacing; tests shorten the
// pauses and step the clock, to make the same kind of tries without waiting
// for them.
type pacing struct {
	backoff gax.Backoff
	now     func() time.Time
}

var defaultPacing = pacing{
	backoff: gax.Backoff{Initial: 100 * time.Millisecond, Max: 2 * time.Second, Multiplier: 2},
	now:     time.Now,
}

// An abandoned resumable upload leaves nothing the API can list, and GCS
// expires it on its own; the pending state of a gcs Bucket (blob.Pending,
// in compose.go) is the intermediate objects of its composes.
var _ blob.Bucket = (*Bucket)(nil)

// New validates cfg (returning every problem, each wrapping
// blob.ErrInvalidConfig) and builds the client. It does not contact the
// server; use Check for readiness.
func New(ctx context.Context, cfg Config, log *zap.Logger) (*Bucket, error) {
	return newBucket(ctx, cfg, log, defaultPacing)
}

func newBucket(ctx context.Context, cfg Config, log *zap.Logger, p pacing) (*Bucket, error) {
	cfg.setDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	var opts []option.ClientOption
	if cfg.Endpoint != "" {
		opts = append(opts, option.WithEndpoint(cfg.Endpoint))
		if strings.HasPrefix(cfg.Endpoint, "http://") {
			opts = append(opts, option.WithoutAuthentication(), gstorage.WithJSONReads())
		}
	}
	client, err := gstorage.NewClient(ctx, opts...)
	if err != nil {
		return nil, fmt.Errorf("gcs: create client: %w", err)
	}
	retry := []gstorage.RetryOption{
		gstorage.WithMaxAttempts(cfg.MaxAttempts),
		gstorage.WithBackoff(p.backoff),
	}
	return &Bucket{
		client: client,
		cfg:    cfg,
		reads:  client.Bucket(cfg.Bucket).Retryer(retry...),
		writes: client.Bucket(cfg.Bucket).Retryer(append(retry, gstorage.WithPolicy(gstorage.RetryAlways))...),
		now:    p.now,
		log:    log,
	}, nil
}

func (b *Bucket) name(key string) string { return b.cfg.Prefix + key }

func (b *Bucket) open() error {
	if b.closed.Load() {
		return fmt.Errorf("%w: bucket closed", blob.ErrUnavailable)
	}
	return nil
}

var copyBufs = sync.Pool{New: func() any { return new([copyBufSize]byte) }}

// Upload implements blob.Bucket.
func (b *Bucket) Upload(ctx context.Context, key string, r io.Reader, size int64, opts blob.UploadOptions) (blob.Object, error) {
	if err := blob.ValidateKey(key); err != nil {
		return blob.Object{}, err
	}
	body := blob.NewBody(r, size)
	fail := func(err error) (blob.Object, error) {
		return blob.Object{}, fmt.Errorf("gcs: upload %s: %w", key, body.Cause(ctx, err))
	}
	if err := b.open(); err != nil {
		return fail(err)
	}
	if err := ctx.Err(); err != nil {
		return fail(err)
	}
	// Cancelling wctx is what abandons the upload: the writer then never
	// finalizes it, so GCS creates no object.
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	streak := &retryStreak{limit: b.cfg.ChunkRetryDeadline, now: b.now}
	w := b.writes.Object(b.name(key)).Retryer(gstorage.WithErrorFunc(streak.shouldRetry)).NewWriter(wctx)
	w.ChunkSize = b.cfg.ChunkSize
	w.ChunkRetryDeadline = b.cfg.ChunkRetryDeadline
	w.ChunkTransferTimeout = b.cfg.ChunkTransferTimeout
	w.ContentType = opts.ContentType
	if w.ContentType == "" {
		w.ContentType = "application/octet-stream"
	}

	buf := copyBufs.Get().(*[copyBufSize]byte)
	_, err := io.CopyBuffer(w, body, buf[:])
	copyBufs.Put(buf)
	if err == nil {
		// A cancellation that came after the last read must still win:
		// Close would finalize the object.
		err = ctx.Err()
	}
	if err != nil {
		cancel()
		w.Close() // reports the cancellation; the error that matters is err
		return fail(classifyWrite(err))
	}
	if err := w.Close(); err != nil {
		return fail(classifyWrite(err))
	}
	attrs := w.Attrs()
	obj := blob.Object{Key: key, Size: body.N(), ContentType: w.ContentType, Modified: time.Now()}
	if attrs != nil {
		obj.Size, obj.ContentType, obj.Modified = attrs.Size, attrs.ContentType, attrs.Updated
	}
	return obj, nil
}

// retryStreak decides the retries of one upload. The library bounds the
// retries of a resumable chunk by ChunkRetryDeadline, but retries the
// request that starts an upload (the whole upload, for a body smaller than a
// chunk) until the context ends — with a server down, for as long as the
// client waits. A streak of failures (none more than limit after the
// previous one) is retried for at most limit, whichever request fails.
type retryStreak struct {
	limit       time.Duration
	now         func() time.Time
	mu          sync.Mutex
	first, last time.Time
}

func (r *retryStreak) shouldRetry(err error) bool {
	if !gstorage.ShouldRetry(err) {
		return false
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	now := r.now()
	if r.first.IsZero() || now.Sub(r.last) > r.limit {
		r.first = now
	}
	r.last = now
	return now.Sub(r.first) < r.limit
}

// Open implements blob.Bucket.
func (b *Bucket) Open(ctx context.Context, key string) (io.ReadCloser, error) {
	if err := blob.ValidateKey(key); err != nil {
		return nil, err
	}
	if err := b.open(); err != nil {
		return nil, fmt.Errorf("gcs: open %s: %w", key, err)
	}
	r, err := b.reads.Object(b.name(key)).NewReader(ctx)
	if err != nil {
		return nil, fmt.Errorf("gcs: open %s: %w", key, classify(err))
	}
	return r, nil
}

// OpenRange implements blob.Bucket.
func (b *Bucket) OpenRange(ctx context.Context, key string, offset, length int64) (io.ReadCloser, error) {
	if err := blob.ValidateKey(key); err != nil {
		return nil, err
	}
	if offset < 0 || length < 1 {
		return nil, fmt.Errorf("gcs: open %s: invalid range %d+%d", key, offset, length)
	}
	if err := b.open(); err != nil {
		return nil, fmt.Errorf("gcs: open %s: %w", key, err)
	}
	r, err := b.reads.Object(b.name(key)).NewRangeReader(ctx, offset, length)
	if err != nil {
		return nil, fmt.Errorf("gcs: open %s: %w", key, classify(err))
	}
	return r, nil
}

// Stat implements blob.Bucket.
func (b *Bucket) Stat(ctx context.Context, key string) (blob.Object, error) {
	if err := blob.ValidateKey(key); err != nil {
		return blob.Object{}, err
	}
	if err := b.open(); err != nil {
		return blob.Object{}, fmt.Errorf("gcs: stat %s: %w", key, err)
	}
	ctx, cancel := context.WithTimeout(ctx, b.cfg.RequestTimeout)
	defer cancel()
	attrs, err := b.reads.Object(b.name(key)).Attrs(ctx)
	if err != nil {
		return blob.Object{}, fmt.Errorf("gcs: stat %s: %w", key, classify(err))
	}
	return blob.Object{Key: key, Size: attrs.Size, ContentType: attrs.ContentType, Modified: attrs.Updated}, nil
}

// Delete implements blob.Bucket.
func (b *Bucket) Delete(ctx context.Context, key string) error {
	if err := blob.ValidateKey(key); err != nil {
		return err
	}
	if err := b.open(); err != nil {
		return fmt.Errorf("gcs: delete %s: %w", key, err)
	}
	ctx, cancel := context.WithTimeout(ctx, b.cfg.RequestTimeout)
	defer cancel()
	err := b.reads.Object(b.name(key)).Delete(ctx)
	if err := classify(err); err != nil && !errors.Is(err, blob.ErrNotFound) {
		return fmt.Errorf("gcs: delete %s: %w", key, err)
	}
	return nil
}

// List implements blob.Bucket.
func (b *Bucket) List(ctx context.Context, prefix string) ([]string, error) {
	if err := b.open(); err != nil {
		return nil, fmt.Errorf("gcs: list %q: %w", prefix, err)
	}
	q := &gstorage.Query{Prefix: b.name(prefix)}
	if err := q.SetAttrSelection([]string{"Name"}); err != nil {
		return nil, fmt.Errorf("gcs: list %q: %w", prefix, err)
	}
	it := b.reads.Objects(ctx, q)
	var keys []string
	for {
		attrs, err := it.Next()
		if errors.Is(err, iterator.Done) {
			return keys, nil
		}
		if err != nil {
			return nil, fmt.Errorf("gcs: list %q: %w", prefix, classify(err))
		}
		if k := strings.TrimPrefix(attrs.Name, b.cfg.Prefix); !isIntermediate(k) {
			keys = append(keys, k)
		}
	}
}

// ListAfter implements blob.Bucket: objects from after on (the query's
// StartOffset includes it, so it is skipped), stopping at limit.
func (b *Bucket) ListAfter(ctx context.Context, prefix, after string, limit int) ([]string, error) {
	if err := b.open(); err != nil {
		return nil, fmt.Errorf("gcs: list %q after %q: %w", prefix, after, err)
	}
	q := &gstorage.Query{Prefix: b.name(prefix)}
	if after != "" {
		q.StartOffset = b.name(after)
	}
	if err := q.SetAttrSelection([]string{"Name"}); err != nil {
		return nil, fmt.Errorf("gcs: list %q: %w", prefix, err)
	}
	it := b.reads.Objects(ctx, q)
	var keys []string
	for len(keys) < limit {
		attrs, err := it.Next()
		if errors.Is(err, iterator.Done) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("gcs: list %q after %q: %w", prefix, after, classify(err))
		}
		if k := strings.TrimPrefix(attrs.Name, b.cfg.Prefix); k > after && !isIntermediate(k) {
			keys = append(keys, k)
		}
	}
	return keys, nil
}

// Check implements blob.Bucket by reading the bucket's attributes.
func (b *Bucket) Check(ctx context.Context) error {
	if err := b.open(); err != nil {
		return fmt.Errorf("gcs: check: %w", err)
	}
	ctx, cancel := context.WithTimeout(ctx, b.cfg.RequestTimeout)
	defer cancel()
	if _, err := b.reads.Attrs(ctx); err != nil {
		return fmt.Errorf("gcs: check bucket %s: %w", b.cfg.Bucket, classify(err))
	}
	return nil
}

// Close implements blob.Bucket.
func (b *Bucket) Close() error {
	if b.closed.Swap(true) {
		return nil
	}
	return b.client.Close()
}

// classify and classifyWrite map this client's errors to the backends
// sentinels.
func classify(err error) error      { return blob.Classify(err, sentinel) }
func classifyWrite(err error) error { return blob.ClassifyWrite(err, sentinel) }

func sentinel(err error) error {
	var api *googleapi.Error
	switch {
	case errors.Is(err, gstorage.ErrObjectNotExist), errors.Is(err, gstorage.ErrBucketNotExist):
		return blob.ErrNotFound
	case errors.As(err, &api):
		return remote.StatusError(api.Code)
	case remote.Unreachable(err):
		return blob.ErrUnavailable
	}
	return nil
}
