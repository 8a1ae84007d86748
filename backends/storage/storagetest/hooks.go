package storagetest

// Contract cases that Run cannot drive alone: each needs something only the
// backend's own test can do (configure a key prefix, point at a missing
// bucket, take the storage away). The backend test supplies that as a small
// hook and the case makes the same assertions on every backend. Unreachable,
// in storagetest.go, is one of them too.

import (
	"bytes"
	"context"
	"errors"
	"io"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/aigateway/gateway/files/blob"
)

// PrefixStore is what the Prefix case needs from a backend: buckets that
// keep their objects under a key prefix, and a way to look at the storage
// behind their back, where names are whole (the prefix included).
type PrefixStore struct {
	// NewBucket returns an empty bucket whose objects live under prefix
	// ("gw/files/": a relative path ending with a slash), released by its
	// own t.Cleanup. Every call of one test must share one storage.
	NewBucket func(t *testing.T, prefix string) blob.Bucket
	// Put stores data under name in the storage itself, outside any Bucket.
	Put func(t *testing.T, name string, data []byte)
	// Get returns the content stored under name, and false when there is
	// none.
	Get func(t *testing.T, name string) ([]byte, bool)
}

// Prefix checks a bucket configured with a key prefix: its keys land under
// the prefix, and listing, Stat and Delete see only its own keys, never the
// objects stored beside it (another deployment's, or an operator's).
func Prefix(t *testing.T, s PrefixStore) {
	const prefix = "gw/files/"
	ctx := opContext(t)
	b := s.NewBucket(t, prefix)
	// Outside the prefix: an unrelated name, and the very key the bucket
	// uploads below, which must not be mistaken for the bucket's own.
	s.Put(t, "other/x", []byte("x"))
	s.Put(t, "ws/1/g", []byte("outside"))

	MustUpload(t, b, "ws/1/f", []byte("hello"))
	if got, ok := s.Get(t, prefix+"ws/1/f"); !ok {
		t.Errorf("object not under the prefix")
	} else if string(got) != "hello" {
		t.Errorf("object under the prefix holds %q, want hello", got)
	}
	NoLeftovers(t, b, "ws/1/f")

	if obj, err := b.Stat(ctx, "ws/1/g"); !errors.Is(err, blob.ErrNotFound) {
		t.Errorf("Stat of a key stored only outside the prefix = %+v, %v; want ErrNotFound", obj, err)
	}
	if err := b.Delete(ctx, "ws/1/g"); err != nil {
		t.Errorf("Delete of a key stored only outside the prefix = %v, want nil", err)
	}
	if got, ok := s.Get(t, "ws/1/g"); !ok || string(got) != "outside" {
		t.Errorf("the Bucket's Delete reached the object outside its prefix")
	}
	if err := b.Delete(ctx, "ws/1/f"); err != nil {
		t.Fatalf("Delete: %v", err)
	}
	if _, ok := s.Get(t, prefix+"ws/1/f"); ok {
		t.Errorf("Delete left the object under the prefix")
	}
	if _, ok := s.Get(t, "other/x"); !ok {
		t.Errorf("the object outside the prefix is gone")
	}
	NoLeftovers(t, b)
}

// MissingBucket checks a bucket whose storage answers but whose bucket does
// not exist: Check says so with blob.ErrNotFound (readiness names the
// misconfiguration), while an Upload into it is an error that is not
// ErrNotFound, which callers take for "no such object".
func MissingBucket(t *testing.T, b blob.Bucket) {
	t.Helper()
	ctx := opContext(t)
	if err := b.Check(ctx); !errors.Is(err, blob.ErrNotFound) {
		t.Errorf("Check = %v, want ErrNotFound", err)
	}
	// An upload into a missing bucket is a misconfiguration, never the
	// caller's "not found".
	_, err := b.Upload(ctx, "ws/1/f", bytes.NewReader([]byte("x")), 1, blob.UploadOptions{})
	if err == nil || errors.Is(err, blob.ErrNotFound) {
		t.Errorf("Upload = %v, want an error that is not ErrNotFound", err)
	}
}

// Sizes of the upload StopsMidUpload interrupts: past the first S3 part, so
// a multipart upload exists and a part is on its way, past several GCS
// chunks and fs copy buffers; and a multiple of the fs copy buffer, so the
// fs backend has written everything it read when the body stalls.
const (
	stopBodySize = 9 * MiB
	stopAt       = 6 * MiB
)

// StopsMidUpload checks an upload during which the storage goes away: the
// upload fails with blob.ErrUnavailable, and once the storage is back
// there is no object and nothing left over (no temporary file, no pending
// multipart upload).
//
// b must be empty. stop takes the storage away (kills the server, fills the
// disk) while the upload waits for the rest of its body, stopAt bytes in;
// start brings it back, and may first check what the backend holds while
// the storage is away. Both report their own failures on t.
func StopsMidUpload(t *testing.T, b blob.Bucket, stop, start func(t *testing.T)) {
	const key = "ws/1/f"
	r := &gateReader{
		r:       ChunkedReader(Data(1, stopBodySize)),
		at:      stopAt,
		reached: make(chan struct{}),
		gate:    make(chan struct{}),
	}
	// Whatever happens, the upload must not stay blocked on its body after
	// the test ends.
	t.Cleanup(r.open)
	ctx := opContext(t)
	errc := make(chan error, 1)
	go func() {
		_, err := b.Upload(ctx, key, r, -1, blob.UploadOptions{})
		errc <- err
	}()
	select {
	case <-r.reached:
	case err := <-errc:
		t.Fatalf("Upload returned before the storage stopped: %v", err)
	}
	stop(t)
	r.open()
	if err := <-errc; !errors.Is(err, blob.ErrUnavailable) {
		t.Fatalf("Upload = %v, want ErrUnavailable", err)
	}

	start(t)
	if _, err := b.Stat(opContext(t), key); !errors.Is(err, blob.ErrNotFound) {
		t.Errorf("Stat after the failed upload = %v, want ErrNotFound", err)
	}
	NoLeftovers(t, b)
}

// gateReader reads r until at bytes, then signals reached and blocks until
// the gate is opened.
type gateReader struct {
	r        io.Reader
	at, n    int64
	reached  chan struct{}
	gate     chan struct{}
	once     sync.Once
	openOnce sync.Once
}

func (g *gateReader) open() { g.openOnce.Do(func() { close(g.gate) }) }

func (g *gateReader) Read(p []byte) (int, error) {
	if g.n >= g.at {
		g.once.Do(func() { close(g.reached) })
		<-g.gate
	} else if rest := g.at - g.n; int64(len(p)) > rest {
		p = p[:rest]
	}
	n, err := g.r.Read(p)
	g.n += int64(n)
	return n, err
}

// ComposeCrash checks what a process dying in the middle of a Compose
// leaves behind, and that the sweep removes it: state that PendingUploads
// lists (a temporary file, a multipart upload, intermediate objects),
// nothing List shows but the sources, no object under dst; AbortPending
// leaves it while it is younger than the cutoff and removes it after, and
// a Compose of the same dst then succeeds.
//
// b must be empty and implement blob.Pending. crash does what Compose
// does up to some point in its middle, as the backend's own code would,
// and returns there without cleaning up, as a dying process would.
func ComposeCrash(t *testing.T, b blob.Bucket, crash func(ctx context.Context, dst string, srcs []string) error) {
	p, ok := b.(blob.Pending)
	if !ok {
		t.Fatal("the bucket does not implement blob.Pending: a crashed compose's leftovers cannot be found")
	}
	ctx := opContext(t)
	ws := newWorkspace()
	// Past GCS's 32 sources per request, with an S3 part copied and
	// others streamed.
	srcs := uploadSources(t, b, ws, 1, append(manySmall(40), 6*MiB, 100)...)
	keys := keysOf(srcs)
	dst := "ws/" + ws + "/dst"
	if err := crash(ctx, dst, keys); err != nil {
		t.Fatalf("crash: %v", err)
	}
	pending, err := p.PendingUploads(ctx)
	if err != nil || len(pending) == 0 {
		t.Fatalf("after the crash: PendingUploads = %q, %v; want the compose's state", pending, err)
	}
	want := sortedKeys([][]source{srcs})
	if got, err := b.List(ctx, ""); err != nil || !slices.Equal(got, want) {
		t.Errorf("after the crash: List = %q, %v; want only the sources", got, err)
	}
	checkAbsent(t, b, dst)
	if n, err := p.AbortPending(ctx, time.Now().Add(-time.Hour), 1000); err != nil || n != 0 {
		t.Errorf("AbortPending of what is older than an hour = %d, %v; want 0", n, err)
	}
	if n, err := p.AbortPending(ctx, time.Now().Add(time.Hour), 1000); err != nil || n < 1 {
		t.Errorf("AbortPending of everything = %d, %v; want the crashed compose's state", n, err)
	}
	NoLeftovers(t, b, want...)
	if _, err := b.Compose(ctx, dst, keys, blob.UploadOptions{}); err != nil {
		t.Fatalf("Compose after the sweep: %v", err)
	}
	MustContain(t, b, dst, concat(srcs))
	NoLeftovers(t, b, sortedKeys([][]source{srcs}, dst)...)
}
