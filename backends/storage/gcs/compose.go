package gcs

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	gstorage "cloud.google.com/go/storage"
	"go.uber.org/zap"
	"golang.org/x/sync/errgroup"
	"google.golang.org/api/iterator"

	"github.com/aigateway/gateway/files/blob"
)

const (
	// composeDir holds, under the prefix, the intermediate objects of the
	// composes in progress. blob.ValidateKey refuses a segment starting
	// with ".", so no key can name them; List leaves them out, and
	// PendingUploads and AbortPending are about them alone.
	composeDir = ".compose/"
	// maxComposeSources is GCS's limit on the sources of one request.
	maxComposeSources = 32
	// composeParallel bounds the requests one Compose has in flight.
	composeParallel = 8
)

var _ blob.Pending = (*Bucket)(nil)

// Compose implements blob.Bucket with GCS's compose, which concatenates up
// to 32 objects in the server, so no byte passes through the gateway. More
// sources are composed in steps: each run of 32 into an intermediate
// object, then those the same way, until 32 or fewer remain, which the
// last request composes into dst. The intermediates of a step are deleted
// once the next step is built, and all of them when Compose returns,
// whatever the outcome; the ones a crash leaves are pending uploads
// (PendingUploads, AbortPending). 10,000 sources take 313 + 10 + 1
// requests.
//
// The last request alone writes dst, so dst appears whole or not at all.
// It is sent only if ctx has not ended, and is not cut short by ctx once
// sent: its answer says whether dst was written. When every try of it
// fails on the network, whether dst was written is unknown; the error is
// then ErrUnavailable.
func (b *Bucket) Compose(ctx context.Context, dst string, srcs []string, opts blob.UploadOptions) (blob.Object, error) {
	if err := blob.ValidateCompose(dst, srcs); err != nil {
		return blob.Object{}, err
	}
	fail := func(err error) (blob.Object, error) {
		return blob.Object{}, fmt.Errorf("gcs: compose %s: %w", dst, blob.ContextCause(ctx, err))
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
	run, err := composeRun()
	if err != nil {
		return fail(err)
	}

	level := make([]string, len(srcs))
	for i, src := range srcs {
		level[i] = b.name(src)
	}
	var made []string // intermediates of the current level
	defer func() { b.deleteIntermediates(ctx, made) }()
	for step := 0; len(level) > maxComposeSources; step++ {
		next, err := b.composeStep(ctx, run, step, level, srcs)
		// Whatever was made is deleted even on failure; next holds it.
		b.deleteIntermediates(ctx, made)
		made = next
		if err != nil {
			return fail(err)
		}
		level = next
	}
	if err := ctx.Err(); err != nil {
		return fail(err)
	}
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), b.cfg.RequestTimeout)
	defer cancel()
	attrs, err := b.compose(cctx, b.name(dst), level, contentType)
	if err != nil {
		if len(made) == 0 {
			err = b.findMissing(cctx, srcs, err)
		}
		return fail(err)
	}
	return blob.Object{Key: dst, Size: attrs.Size, ContentType: attrs.ContentType, Modified: attrs.Updated}, nil
}

// composeRun names the intermediates of one Compose: unique, so that
// concurrent composes of one dst never share one.
func composeRun() (string, error) {
	var rnd [12]byte
	if _, err := rand.Read(rnd[:]); err != nil {
		return "", err
	}
	return hex.EncodeToString(rnd[:]), nil
}

// composeStep composes level, in runs of maxComposeSources, into
// intermediates, and returns the names of those it made: all of them when
// the error is nil, else those that may exist. srcs are the Compose's own
// sources, to name a missing one when level is made of them (step 0).
func (b *Bucket) composeStep(ctx context.Context, run string, step int, level, srcs []string) ([]string, error) {
	n := (len(level) + maxComposeSources - 1) / maxComposeSources
	next := make([]string, n)
	var started atomic.Int64
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(composeParallel)
	for i := range n {
		if gctx.Err() != nil {
			break
		}
		name := b.name(composeDir + run + "/" + strconv.Itoa(step) + "-" + strconv.Itoa(i))
		next[i] = name
		started.Store(int64(i + 1))
		g.Go(func() error {
			lo, hi := i*maxComposeSources, min((i+1)*maxComposeSources, len(level))
			if err := gctx.Err(); err != nil {
				return err
			}
			// A request once sent runs to its end: one cut short may still
			// create its object after the cleanup has deleted the others.
			cctx, cancel := context.WithTimeout(context.WithoutCancel(gctx), b.cfg.RequestTimeout)
			defer cancel()
			_, err := b.compose(cctx, name, level[lo:hi], "application/octet-stream")
			if err != nil && step == 0 {
				err = b.findMissing(gctx, srcs[lo:hi], err)
			}
			return err
		})
	}
	err := g.Wait()
	if err == nil {
		err = ctx.Err()
	}
	return next[:started.Load()], err
}

// compose writes name as the concatenation of the objects srcs (whole
// names).
func (b *Bucket) compose(ctx context.Context, name string, srcs []string, contentType string) (*gstorage.ObjectAttrs, error) {
	handles := make([]*gstorage.ObjectHandle, len(srcs))
	for i, src := range srcs {
		handles[i] = b.writes.Object(src)
	}
	c := b.writes.Object(name).ComposerFrom(handles...)
	c.ContentType = contentType
	attrs, err := c.Run(ctx)
	if err != nil {
		return nil, classifyWrite(err)
	}
	return attrs, nil
}

// findMissing returns a *blob.MissingSourceError for the first of srcs
// that does not exist, or err when all do (or cannot be told). A compose
// request fails as a whole, without naming the source it lacked (the
// emulator even answers 500), so the sources are looked at only then.
func (b *Bucket) findMissing(ctx context.Context, srcs []string, err error) error {
	for _, src := range srcs {
		sctx, cancel := context.WithTimeout(ctx, b.cfg.RequestTimeout)
		_, serr := b.reads.Object(b.name(src)).Attrs(sctx)
		cancel()
		switch {
		case errors.Is(serr, gstorage.ErrObjectNotExist):
			return &blob.MissingSourceError{Key: src}
		case serr != nil:
			return err
		}
	}
	return err
}

// deleteIntermediates deletes the objects names, on a context of their own
// (ctx may be why the Compose failed); one that cannot be deleted is
// logged, and left for AbortPending.
func (b *Bucket) deleteIntermediates(ctx context.Context, names []string) {
	if len(names) == 0 {
		return
	}
	ctx = context.WithoutCancel(ctx)
	var g errgroup.Group
	g.SetLimit(composeParallel)
	for _, name := range names {
		g.Go(func() error {
			dctx, cancel := context.WithTimeout(ctx, b.cfg.RequestTimeout)
			defer cancel()
			err := b.reads.Object(name).Delete(dctx)
			if err != nil && !errors.Is(err, gstorage.ErrObjectNotExist) {
				b.log.Warn("gcs: cannot delete an intermediate object of a compose; AbortPending will",
					zap.String("object", name), zap.Error(err))
			}
			return nil
		})
	}
	g.Wait()
}

// PendingUploads implements blob.Pending: the intermediate objects of
// composes in progress, or left by a crash.
func (b *Bucket) PendingUploads(ctx context.Context) ([]string, error) {
	if err := b.open(); err != nil {
		return nil, fmt.Errorf("gcs: list intermediates: %w", err)
	}
	var out []string
	err := b.intermediates(ctx, func(attrs *gstorage.ObjectAttrs) error {
		out = append(out, strings.TrimPrefix(attrs.Name, b.cfg.Prefix))
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("gcs: list intermediates: %w", err)
	}
	return out, nil
}

// AbortPending implements blob.Pending: it deletes the intermediate
// objects of composes created before before. A live Compose deletes its
// own within seconds, so only a crash's are that old.
func (b *Bucket) AbortPending(ctx context.Context, before time.Time, limit int) (int, error) {
	if err := b.open(); err != nil {
		return 0, fmt.Errorf("gcs: abort pending: %w", err)
	}
	removed := 0
	errDone := errors.New("limit reached")
	err := b.intermediates(ctx, func(attrs *gstorage.ObjectAttrs) error {
		if removed >= limit {
			return errDone
		}
		if !attrs.Created.Before(before) {
			return nil
		}
		dctx, cancel := context.WithTimeout(ctx, b.cfg.RequestTimeout)
		defer cancel()
		err := b.reads.Object(attrs.Name).Delete(dctx)
		if err != nil && !errors.Is(err, gstorage.ErrObjectNotExist) {
			return fmt.Errorf("delete %s: %w", attrs.Name, classify(err))
		}
		removed++
		return nil
	})
	if err != nil && !errors.Is(err, errDone) {
		return removed, fmt.Errorf("gcs: abort pending: %w", err)
	}
	return removed, nil
}

// intermediates calls fn with every intermediate object under the
// prefix, until fn returns an error.
func (b *Bucket) intermediates(ctx context.Context, fn func(*gstorage.ObjectAttrs) error) error {
	q := &gstorage.Query{Prefix: b.name(composeDir)}
	if err := q.SetAttrSelection([]string{"Name", "Created"}); err != nil {
		return err
	}
	it := b.reads.Objects(ctx, q)
	for {
		attrs, err := it.Next()
		if errors.Is(err, iterator.Done) {
			return nil
		}
		if err != nil {
			return classify(err)
		}
		if err := fn(attrs); err != nil {
			return err
		}
	}
}

// isIntermediate reports whether k, a name without the prefix, is an
// intermediate object of a compose rather than a key.
func isIntermediate(k string) bool { return strings.HasPrefix(k, composeDir) }
