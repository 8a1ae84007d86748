// Package storagetest is the contract suite of blob.Bucket: one set of
// tests that every implementation (fs, s3, gcs) runs against a real
// instance, so they cannot drift apart in the semantics the gateway relies
// on — all-or-nothing uploads, not-found and idempotent delete, the reader's
// error surfacing intact, invalid keys refused, concurrent uploads. Run holds
// the cases a bucket alone can drive; Prefix, MissingBucket, Unreachable and
// StopsMidUpload need a hook from the backend's own test (hooks.go).
package storagetest

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"iter"
	mrand "math/rand/v2"
	"net"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aigateway/gateway/files/blob"
)

// MiB is a mebibyte.
const MiB = 1 << 20

// Body sizes. S3 sends bodies up to one part (5 MiB) in a single request and
// larger ones as multipart uploads, so the large sizes cross that line; they
// stay far below what makes the GCS emulator slow (it buffers whole objects).
const (
	partSize  = 5 * MiB
	largeSize = 12*MiB + 3 // two full parts and a partial one
	failPoint = 7 * MiB    // past the first part: a multipart upload exists
)

// opTimeout bounds every operation of the suite, so a hung backend fails the
// test instead of stalling the run.
const opTimeout = 2 * time.Minute

// Run runs the contract suite. newBucket is called once per subtest and
// must return an empty bucket, usable for the rest of that subtest and
// released by its own t.Cleanup. After every failed upload the bucket is
// checked for leftovers: objects, and unfinished uploads where it
// implements blob.Pending.
//
// opts adjust the suite to a backend's documented differences.
func Run(t *testing.T, newBucket func(t *testing.T) blob.Bucket, opts ...Option) {
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	t.Run("RoundTrip", func(t *testing.T) { testRoundTrip(t, newBucket(t)) })
	t.Run("Overwrite", func(t *testing.T) { testOverwrite(t, newBucket(t)) })
	t.Run("NotFound", func(t *testing.T) { testNotFound(t, newBucket(t)) })
	t.Run("DeleteIsIdempotent", func(t *testing.T) { testDelete(t, newBucket(t)) })
	t.Run("ReaderErrorLeavesNothing", func(t *testing.T) { testReaderError(t, newBucket) })
	t.Run("CancelLeavesNothing", func(t *testing.T) { testCancel(t, newBucket) })
	t.Run("SizeMismatchLeavesNothing", func(t *testing.T) { testSizeMismatch(t, newBucket) })
	t.Run("FailedOverwriteKeepsPrevious", func(t *testing.T) { testFailedOverwrite(t, newBucket(t)) })
	t.Run("InvalidKeys", func(t *testing.T) { testInvalidKeys(t, newBucket(t)) })
	t.Run("Concurrent", func(t *testing.T) { testConcurrent(t, newBucket(t)) })
	t.Run("List", func(t *testing.T) { testList(t, newBucket(t)) })
	t.Run("OpenRange", func(t *testing.T) { testOpenRange(t, newBucket(t)) })
	t.Run("ListAfter", func(t *testing.T) { testListAfter(t, newBucket(t)) })
	t.Run("AbortPending", func(t *testing.T) {
		if o.uploadsLeaveNothingPending {
			t.Skip("the bucket's uploads keep no pending state; ComposeCrash covers its pending state")
		}
		testAbortPending(t, newBucket(t))
	})
	t.Run("Closed", func(t *testing.T) { testClosed(t, newBucket(t)) })
	runCompose(t, newBucket)
}

// Option adjusts Run to a backend.
type Option func(*options)

type options struct {
	uploadsLeaveNothingPending bool
}

// UploadsLeaveNothingPending tells Run that the bucket implements
// blob.Pending for its composes only: an upload in progress keeps no state
// PendingUploads lists (GCS's resumable uploads), so the AbortPending
// case, which holds an upload open and looks for its state, does not
// apply. ComposeCrash checks such a bucket's pending state instead.
func UploadsLeaveNothingPending() Option {
	return func(o *options) { o.uploadsLeaveNothingPending = true }
}

// heldReader yields n bytes, then blocks until release is closed and fails.
type heldReader struct {
	data    []byte
	release chan struct{}
}

func (h *heldReader) Read(p []byte) (int, error) {
	if len(h.data) > 0 {
		n := copy(p, h.data)
		h.data = h.data[n:]
		return n, nil
	}
	<-h.release
	return 0, errors.New("test reader released")
}

// testAbortPending: an unfinished upload (the state a crashed process
// leaves) is removed by AbortPending once it is older than the cutoff, and
// only then; the upload it belonged to leaves nothing either.
func testAbortPending(t *testing.T, b blob.Bucket) {
	p, ok := b.(blob.Pending)
	if !ok {
		t.Skip("the bucket keeps no state for unfinished uploads")
	}
	ctx := opContext(t)
	// More than one S3 part, so a multipart upload exists.
	r := &heldReader{data: Data(7, 6<<20), release: make(chan struct{})}
	done := make(chan error, 1)
	go func() {
		_, err := b.Upload(ctx, newWorkspace()+"/held", r, -1, blob.UploadOptions{})
		done <- err
	}()
	released := false
	defer func() {
		if !released {
			close(r.release)
			<-done
		}
	}()
	deadline := time.Now().Add(30 * time.Second)
	for {
		pending, err := p.PendingUploads(ctx)
		if err == nil && len(pending) > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no pending upload within 30s (last error %v)", err)
		}
		time.Sleep(20 * time.Millisecond) // poll interval, bounded by the deadline
	}
	if n, err := p.AbortPending(ctx, time.Now().Add(-time.Hour), 10); err != nil || n != 0 {
		t.Errorf("AbortPending of uploads older than an hour = %d, %v; want 0 (it is newer)", n, err)
	}
	if n, err := p.AbortPending(ctx, time.Now().Add(time.Hour), 10); err != nil || n < 1 {
		t.Errorf("AbortPending of everything = %d, %v; want the pending upload", n, err)
	}
	if pending, err := p.PendingUploads(ctx); err != nil || len(pending) != 0 {
		t.Errorf("after AbortPending: pending %q, %v", pending, err)
	}
	close(r.release)
	released = true
	if err := <-done; err == nil {
		t.Errorf("an upload whose pending state was removed reported success")
	}
	NoLeftovers(t, b)
}

func testRoundTrip(t *testing.T, b blob.Bucket) {
	ws := newWorkspace()
	cases := []struct {
		name    string
		size    int
		declare bool
	}{
		{"empty/known", 0, true},
		{"empty/unknown", 0, false},
		{"one-byte/known", 1, true},
		{"small/unknown", 100<<10 + 7, false},
		{"one-part/unknown", partSize, false},
		{"one-part/known", partSize, true},
		{"two-parts/unknown", 2 * partSize, false},
		{"large/known", largeSize, true},
		{"large/unknown", largeSize, false},
	}
	var keys []string
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			key := fmt.Sprintf("ws/%s/f%d", ws, i)
			data := Data(uint64(i), tc.size)
			size := int64(-1)
			if tc.declare {
				size = int64(len(data))
			}
			ctx := opContext(t)
			obj, err := b.Upload(ctx, key, ChunkedReader(data), size, blob.UploadOptions{ContentType: "text/plain"})
			if err != nil {
				t.Fatalf("Upload: %v", err)
			}
			keys = append(keys, key)
			if obj.Key != key || obj.Size != int64(len(data)) {
				t.Errorf("Upload returned %+v, want key %s size %d", obj, key, len(data))
			}
			st, err := b.Stat(ctx, key)
			if err != nil {
				t.Fatalf("Stat: %v", err)
			}
			if st.Key != key || st.Size != int64(len(data)) {
				t.Errorf("Stat = %+v, want key %s size %d", st, key, len(data))
			}
			if st.ContentType != "" && st.ContentType != "text/plain" {
				t.Errorf("Stat content type = %q, want text/plain", st.ContentType)
			}
			MustContain(t, b, key, data)
		})
	}
	slices.Sort(keys)
	checkLeftovers(t, b, keys...)
}

func testOverwrite(t *testing.T, b blob.Bucket) {
	key := "ws/" + newWorkspace() + "/f"
	for i, size := range []int{1000, failPoint, 10} {
		data := Data(uint64(100+i), size)
		MustUpload(t, b, key, data)
		MustContain(t, b, key, data)
		st, err := b.Stat(opContext(t), key)
		if err != nil || st.Size != int64(size) {
			t.Fatalf("after overwrite %d: Stat = %+v, %v; want size %d", i, st, err, size)
		}
	}
	checkLeftovers(t, b, key)
}

func testNotFound(t *testing.T, b blob.Bucket) {
	ctx := opContext(t)
	ws := newWorkspace()
	nested := "ws/" + ws + "/dir/f"
	MustUpload(t, b, nested, Data(1, 10))
	for _, key := range []string{"ws/" + ws + "/missing", "ws/" + ws + "/dir", "ws/" + ws, "ws"} {
		t.Run(key, func(t *testing.T) {
			if _, err := b.Stat(ctx, key); !errors.Is(err, blob.ErrNotFound) {
				t.Errorf("Stat(%s) = %v, want ErrNotFound", key, err)
			}
			rc, err := b.Open(ctx, key)
			if err == nil {
				rc.Close()
			}
			if !errors.Is(err, blob.ErrNotFound) {
				t.Errorf("Open(%s) = %v, want ErrNotFound", key, err)
			}
		})
	}
}

func testDelete(t *testing.T, b blob.Bucket) {
	ctx := opContext(t)
	ws := newWorkspace()
	key, nested := "ws/"+ws+"/f", "ws/"+ws+"/dir/f"
	MustUpload(t, b, key, Data(1, 100))
	MustUpload(t, b, nested, Data(2, 100))
	for i := range 2 {
		if err := b.Delete(ctx, key); err != nil {
			t.Fatalf("Delete #%d: %v", i+1, err)
		}
	}
	if _, err := b.Stat(ctx, key); !errors.Is(err, blob.ErrNotFound) {
		t.Errorf("Stat after Delete = %v, want ErrNotFound", err)
	}
	if rc, err := b.Open(ctx, key); !errors.Is(err, blob.ErrNotFound) {
		if err == nil {
			rc.Close()
		}
		t.Errorf("Open after Delete = %v, want ErrNotFound", err)
	}
	// Neither a never-stored key nor a prefix of a stored one is an error,
	// and deleting the prefix leaves the object under it alone.
	for _, k := range []string{"ws/" + ws + "/never", "ws/" + ws + "/dir"} {
		if err := b.Delete(ctx, k); err != nil {
			t.Errorf("Delete(%s) = %v, want nil", k, err)
		}
	}
	MustContain(t, b, nested, Data(2, 100))
	checkLeftovers(t, b, nested)
}

// errReader is the error the failing readers return: a distinct type, as a
// caller's size-limit error would be.
type errReader struct{ at int }

func (e *errReader) Error() string { return fmt.Sprintf("test reader failed after %d bytes", e.at) }

func testReaderError(t *testing.T, newBucket func(t *testing.T) blob.Bucket) {
	b := newBucket(t)
	cases := []struct {
		name    string
		size    int
		failAt  int
		declare bool
	}{
		{"at-start", 1000, 0, false},
		{"small", MiB, 64 << 10, false},
		{"small/known", MiB, 64 << 10, true},
		{"large", largeSize, failPoint, false},
		{"large/known", largeSize, failPoint, true},
		{"large/at-part-boundary", largeSize, partSize, false},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			key := fmt.Sprintf("ws/%s/f%d", newWorkspace(), i)
			want := &errReader{at: tc.failAt}
			r := &FailingReader{R: ChunkedReader(Data(uint64(i), tc.size)), After: int64(tc.failAt), Err: want}
			size := int64(-1)
			if tc.declare {
				size = int64(tc.size)
			}
			_, err := b.Upload(opContext(t), key, r, size, blob.UploadOptions{})
			var got *errReader
			if !errors.As(err, &got) || got != want {
				t.Fatalf("Upload error = %v; want one wrapping the reader's *errReader", err)
			}
			if !errors.Is(err, want) {
				t.Errorf("errors.Is(err, reader's error) = false for %v", err)
			}
			checkAbsent(t, b, key)
		})
	}
	checkLeftovers(t, b)
}

func testCancel(t *testing.T, newBucket func(t *testing.T) blob.Bucket) {
	b := newBucket(t)
	cases := []struct {
		name     string
		size     int
		cancelAt int // -1: before Upload is called
	}{
		{"before-start", 1000, -1},
		{"small", MiB, 64 << 10},
		{"large", largeSize, failPoint},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			key := fmt.Sprintf("ws/%s/f%d", newWorkspace(), i)
			ctx, cancel := context.WithCancel(opContext(t))
			defer cancel()
			var r io.Reader = ChunkedReader(Data(uint64(i), tc.size))
			if tc.cancelAt < 0 {
				cancel()
			} else {
				r = &CancelingReader{R: r, After: int64(tc.cancelAt), Cancel: cancel}
			}
			_, err := b.Upload(ctx, key, r, -1, blob.UploadOptions{})
			if !errors.Is(err, context.Canceled) {
				t.Fatalf("Upload error = %v, want one wrapping context.Canceled", err)
			}
			checkAbsent(t, b, key)
		})
	}
	checkLeftovers(t, b)
}

func testSizeMismatch(t *testing.T, newBucket func(t *testing.T) blob.Bucket) {
	b := newBucket(t)
	cases := []struct {
		name           string
		size, declared int
	}{
		{"empty/declared-one", 0, 1},
		{"one/declared-empty", 1, 0},
		{"small/short", 500, 1000},
		{"small/long", 1000, 500},
		{"large/short", failPoint, largeSize},
		{"large/long", largeSize, failPoint},
		{"one-part/declared-one-less", partSize, partSize - 1},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			key := fmt.Sprintf("ws/%s/f%d", newWorkspace(), i)
			_, err := b.Upload(opContext(t), key, ChunkedReader(Data(uint64(i), tc.size)), int64(tc.declared), blob.UploadOptions{})
			var se *blob.SizeError
			if !errors.Is(err, blob.ErrSizeMismatch) || !errors.As(err, &se) {
				t.Fatalf("Upload error = %v, want a *SizeError", err)
			}
			if se.Declared != int64(tc.declared) {
				t.Errorf("SizeError.Declared = %d, want %d", se.Declared, tc.declared)
			}
			checkAbsent(t, b, key)
		})
	}
	checkLeftovers(t, b)
}

func testFailedOverwrite(t *testing.T, b blob.Bucket) {
	key := "ws/" + newWorkspace() + "/f"
	old := Data(1, 1000)
	MustUpload(t, b, key, old)

	_, err := b.Upload(opContext(t), key, &FailingReader{R: ChunkedReader(Data(2, largeSize)), After: failPoint, Err: io.ErrClosedPipe}, -1, blob.UploadOptions{})
	if !errors.Is(err, io.ErrClosedPipe) {
		t.Fatalf("failing overwrite: error = %v, want the reader's", err)
	}
	ctx, cancel := context.WithCancel(opContext(t))
	defer cancel()
	_, err = b.Upload(ctx, key, &CancelingReader{R: ChunkedReader(Data(3, 1000)), After: 10, Cancel: cancel}, -1, blob.UploadOptions{})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled overwrite: error = %v, want context.Canceled", err)
	}
	_, err = b.Upload(opContext(t), key, ChunkedReader(Data(4, 10)), 20, blob.UploadOptions{})
	if !errors.Is(err, blob.ErrSizeMismatch) {
		t.Fatalf("short overwrite: error = %v, want ErrSizeMismatch", err)
	}
	MustContain(t, b, key, old)
	checkLeftovers(t, b, key)
}

func testInvalidKeys(t *testing.T, b blob.Bucket) {
	ctx := opContext(t)
	keys := []string{
		"", "/ws/a", "ws/a/", "ws//a", "ws/./a", "ws/../a", "..", ".", "../../etc/passwd",
		"ws/.tmp/a", ".tmp", "ws\\a", "ws/a\x00b", "ws/a\nb", "ws/\xff", string(bytes.Repeat([]byte("a"), blob.MaxKeyLen+1)),
	}
	for _, key := range keys {
		t.Run(fmt.Sprintf("%.40q", key), func(t *testing.T) {
			if _, err := b.Upload(ctx, key, bytes.NewReader([]byte("x")), 1, blob.UploadOptions{}); !errors.Is(err, blob.ErrInvalidKey) {
				t.Errorf("Upload = %v, want ErrInvalidKey", err)
			}
			if rc, err := b.Open(ctx, key); !errors.Is(err, blob.ErrInvalidKey) {
				if err == nil {
					rc.Close()
				}
				t.Errorf("Open = %v, want ErrInvalidKey", err)
			}
			if _, err := b.Stat(ctx, key); !errors.Is(err, blob.ErrInvalidKey) {
				t.Errorf("Stat = %v, want ErrInvalidKey", err)
			}
			if err := b.Delete(ctx, key); !errors.Is(err, blob.ErrInvalidKey) {
				t.Errorf("Delete = %v, want ErrInvalidKey", err)
			}
		})
	}
	checkLeftovers(t, b)
}

func testConcurrent(t *testing.T, b blob.Bucket) {
	ctx := opContext(t)
	ws := newWorkspace()
	const distinct, same = 6, 4
	shared := "ws/" + ws + "/shared"
	var wg sync.WaitGroup
	var keys []string
	for i := range distinct {
		key := fmt.Sprintf("ws/%s/f%d", ws, i)
		keys = append(keys, key)
		size := 300 << 10
		if i%2 == 1 {
			size = 6 * MiB
		}
		wg.Go(func() {
			if _, err := b.Upload(ctx, key, ChunkedReader(Data(uint64(i), size)), -1, blob.UploadOptions{}); err != nil {
				t.Errorf("Upload(%s): %v", key, err)
			}
		})
	}
	for i := range same {
		wg.Go(func() {
			if _, err := b.Upload(ctx, shared, ChunkedReader(Data(uint64(100+i), MiB)), MiB, blob.UploadOptions{}); err != nil {
				t.Errorf("Upload(%s) #%d: %v", shared, i, err)
			}
		})
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	for i, key := range keys {
		size := 300 << 10
		if i%2 == 1 {
			size = 6 * MiB
		}
		MustContain(t, b, key, Data(uint64(i), size))
	}
	// The shared key holds exactly one of the uploads, never a mixture.
	got := MustRead(t, b, shared)
	found := false
	for i := range same {
		found = found || bytes.Equal(got, Data(uint64(100+i), MiB))
	}
	if !found {
		t.Errorf("%s holds %d bytes matching none of the concurrent uploads", shared, len(got))
	}
	keys = append(keys, shared)
	slices.Sort(keys)
	checkLeftovers(t, b, keys...)
}

func testList(t *testing.T, b blob.Bucket) {
	ctx := opContext(t)
	ws := newWorkspace()
	all := []string{"ws/" + ws + "/a/1", "ws/" + ws + "/a/2", "ws/" + ws + "/b/1"}
	for _, k := range all {
		MustUpload(t, b, k, Data(1, 10))
	}
	for _, tc := range []struct {
		prefix string
		want   []string
	}{
		{"", all},
		{"ws/" + ws + "/a/", all[:2]},
		{"ws/" + ws + "/b", all[2:]},
		{"zz", nil},
	} {
		got, err := b.List(ctx, tc.prefix)
		if err != nil {
			t.Fatalf("List(%q): %v", tc.prefix, err)
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("List(%q) = %q, want %q", tc.prefix, got, tc.want)
		}
	}
}

func testListAfter(t *testing.T, b blob.Bucket) {
	ctx := opContext(t)
	ws := newWorkspace()
	prefix := "ws/" + ws + "/"
	var all []string
	for _, k := range []string{"a/1", "a/2", "b/1", "b/2", "c"} {
		all = append(all, prefix+k)
		MustUpload(t, b, prefix+k, Data(1, 10))
	}
	var got []string
	pages := 0
	for after := ""; ; pages++ {
		page, err := b.ListAfter(ctx, prefix, after, 2)
		if err != nil {
			t.Fatalf("ListAfter(%q): %v", after, err)
		}
		if len(page) > 2 {
			t.Fatalf("ListAfter gave %d keys, more than the limit of 2", len(page))
		}
		if len(page) == 0 {
			break
		}
		got = append(got, page...)
		after = page[len(page)-1]
	}
	if !slices.Equal(got, all) || pages != 3 {
		t.Errorf("paged %q in %d pages, want %q in 3", got, pages, all)
	}
	if page, err := b.ListAfter(ctx, prefix, prefix+"a/1", 10); err != nil || !slices.Equal(page, all[1:]) {
		t.Errorf("ListAfter(a/1) = %q, %v; want the keys after it", page, err)
	}
	if page, err := b.ListAfter(ctx, "zz", "", 10); err != nil || len(page) != 0 {
		t.Errorf("ListAfter of an empty prefix = %q, %v", page, err)
	}
}

// checkAbsent fails the test unless key is missing from b.
func checkAbsent(t *testing.T, b blob.Bucket, key string) {
	t.Helper()
	if obj, err := b.Stat(opContext(t), key); !errors.Is(err, blob.ErrNotFound) {
		t.Errorf("after the failed upload, Stat(%s) = %+v, %v; want ErrNotFound", key, obj, err)
	}
}

// checkLeftovers fails the test unless b holds exactly the keys want
// (sorted) and no unfinished upload, as far as b can tell.
func checkLeftovers(t *testing.T, b blob.Bucket, want ...string) {
	t.Helper()
	NoLeftovers(t, b, want...)
}

// NoLeftovers fails t unless b holds exactly the keys want (sorted) and no
// unfinished upload: no temporary file, no pending multipart upload (for
// a bucket that keeps such state: blob.Pending). Backend tests use it
// after their own failure-injection tests.
func NoLeftovers(t testing.TB, b blob.Bucket, want ...string) {
	t.Helper()
	ctx := opContext(t)
	got, err := b.List(ctx, "")
	if err != nil {
		t.Errorf("List: %v", err)
	} else if !slices.Equal(got, want) {
		t.Errorf("bucket holds %q, want %q", got, want)
	}
	if p, ok := b.(blob.Pending); ok {
		got, err := p.PendingUploads(ctx)
		if err != nil {
			t.Errorf("PendingUploads: %v", err)
		} else if len(got) != 0 {
			t.Errorf("unfinished uploads left behind: %q", got)
		}
	}
}

// MustUpload uploads data under key with its size declared.
func MustUpload(t testing.TB, b blob.Bucket, key string, data []byte) {
	t.Helper()
	if _, err := b.Upload(opContext(t), key, ChunkedReader(data), int64(len(data)), blob.UploadOptions{}); err != nil {
		t.Fatalf("Upload(%s, %d bytes): %v", key, len(data), err)
	}
}

// MustRead returns the content of key.
func MustRead(t testing.TB, b blob.Bucket, key string) []byte {
	t.Helper()
	rc, err := b.Open(opContext(t), key)
	if err != nil {
		t.Fatalf("Open(%s): %v", key, err)
	}
	defer rc.Close()
	got, err := io.ReadAll(rc)
	if err != nil {
		t.Fatalf("reading %s: %v", key, err)
	}
	return got
}

// MustContain fails t unless key holds exactly want.
func MustContain(t testing.TB, b blob.Bucket, key string, want []byte) {
	t.Helper()
	got := MustRead(t, b, key)
	if !bytes.Equal(got, want) {
		i := 0
		for i < len(got) && i < len(want) && got[i] == want[i] {
			i++
		}
		t.Fatalf("%s holds %d bytes, want %d; first difference at byte %d", key, len(got), len(want), i)
	}
}

// Data returns n deterministic pseudo-random bytes; different seeds give
// different content.
func Data(seed uint64, n int) []byte {
	var s [32]byte
	for i := range 8 {
		s[i] = byte(seed >> (8 * i))
	}
	buf := make([]byte, n)
	mrand.NewChaCha8(s).Read(buf)
	return buf
}

// ChunkedReader reads data in uneven pieces of at most a few KiB, like the
// multipart reader the HTTP layer hands to Upload.
func ChunkedReader(data []byte) io.Reader { return &chunked{data: data} }

type chunked struct {
	data []byte
	i    int
}

func (c *chunked) Read(p []byte) (int, error) {
	if len(c.data) == 0 {
		return 0, io.EOF
	}
	c.i++
	n := min(len(p), len(c.data), 1000+(c.i*7919)%7000)
	copy(p, c.data[:n])
	c.data = c.data[n:]
	return n, nil
}

// FailingReader reads After bytes of R, then returns Err.
type FailingReader struct {
	R     io.Reader
	After int64
	Err   error
	n     int64
}

func (f *FailingReader) Read(p []byte) (int, error) {
	if f.n >= f.After {
		return 0, f.Err
	}
	if rest := f.After - f.n; int64(len(p)) > rest {
		p = p[:rest]
	}
	n, err := f.R.Read(p)
	f.n += int64(n)
	return n, err
}

// CancelingReader reads R and calls Cancel once After bytes have been read,
// then goes on reading as if nothing happened, as a client that keeps
// sending after its request was abandoned.
type CancelingReader struct {
	R      io.Reader
	After  int64
	Cancel context.CancelFunc
	n      int64
}

func (c *CancelingReader) Read(p []byte) (int, error) {
	if c.n >= c.After {
		c.Cancel()
	}
	n, err := c.R.Read(p)
	c.n += int64(n)
	return n, err
}

func newWorkspace() string {
	var b [8]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

func opContext(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), opTimeout)
	t.Cleanup(cancel)
	return ctx
}

// Unreachable asserts that every operation of b, whose server cannot be
// reached, fails with blob.ErrUnavailable (the HTTP layer's 503).
func Unreachable(t *testing.T, b blob.Bucket) {
	t.Helper()
	for op, err := range everyOperation(t.Context(), b, "ws/1/f") {
		if !errors.Is(err, blob.ErrUnavailable) {
			t.Errorf("%s = %v, want ErrUnavailable", op, err)
		}
	}
}

// testClosed: after Close every operation fails with ErrUnavailable, but a
// bad key is still reported as such first; closing again is nil.
func testClosed(t *testing.T, b blob.Bucket) {
	ctx := opContext(t)
	key := "ws/" + newWorkspace() + "/f"
	MustUpload(t, b, key, Data(1, 10))
	if err := b.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	for op, err := range everyOperation(ctx, b, key) {
		if !errors.Is(err, blob.ErrUnavailable) {
			t.Errorf("after Close, %s = %v; want ErrUnavailable", op, err)
		}
	}
	if _, err := b.Stat(ctx, "../escape"); !errors.Is(err, blob.ErrInvalidKey) {
		t.Errorf("after Close, Stat of an invalid key = %v; want ErrInvalidKey", err)
	}
	if err := b.Close(); err != nil {
		t.Errorf("second Close = %v, want nil", err)
	}
}

// everyOperation calls every method of b but Close once, on key where
// one takes a key, and yields each one's name and error. A stream
// returned without an error is read to its end, where the failure may
// show instead.
func everyOperation(ctx context.Context, b blob.Bucket, key string) iter.Seq2[string, error] {
	read := func(rc io.ReadCloser, err error) error {
		if err != nil {
			return err
		}
		defer rc.Close()
		_, err = io.Copy(io.Discard, rc)
		return err
	}
	second := func(_ any, err error) error { return err }
	ops := []operation{
		{"Upload", func() error {
			return second(b.Upload(ctx, key, strings.NewReader("x"), 1, blob.UploadOptions{}))
		}},
		{"Compose", func() error {
			return second(b.Compose(ctx, key+"-composed", []string{key, key}, blob.UploadOptions{}))
		}},
		{"Open", func() error { return read(b.Open(ctx, key)) }},
		{"OpenRange", func() error { return read(b.OpenRange(ctx, key, 0, 1)) }},
		{"Stat", func() error { return second(b.Stat(ctx, key)) }},
		{"Delete", func() error { return b.Delete(ctx, key) }},
		{"List", func() error { return second(b.List(ctx, "ws/")) }},
		{"ListAfter", func() error { return second(b.ListAfter(ctx, "ws/", "", 10)) }},
		{"Check", func() error { return b.Check(ctx) }},
	}
	if p, ok := b.(blob.Pending); ok {
		ops = append(ops,
			operation{"PendingUploads", func() error { return second(p.PendingUploads(ctx)) }},
			operation{"AbortPending", func() error { return second(p.AbortPending(ctx, time.Now(), 10)) }})
	}
	return func(yield func(string, error) bool) {
		for _, op := range ops {
			if !yield(op.name, op.call()) {
				return
			}
		}
	}
}

// operation is one call of everyOperation.
type operation struct {
	name string
	call func() error
}

// testOpenRange: every bucket reads a part of an object, from any offset,
// cut at the object's end, and answers a missing key with ErrNotFound.
func testOpenRange(t *testing.T, b blob.Bucket) {
	ctx := opContext(t)
	key := "ws/" + newWorkspace() + "/ranged"
	data := Data(42, partSize+1000)
	if _, err := b.Upload(ctx, key, ChunkedReader(data), int64(len(data)), blob.UploadOptions{}); err != nil {
		t.Fatalf("Upload: %v", err)
	}
	n := int64(len(data))
	for _, r := range []struct{ offset, length int64 }{
		{0, 1}, {0, n}, {1, 10}, {n - 1, 1}, {partSize - 5, 10}, {n - 10, 100}, {12345, MiB},
	} {
		rc, err := b.OpenRange(ctx, key, r.offset, r.length)
		if err != nil {
			t.Fatalf("OpenRange(%d, %d): %v", r.offset, r.length, err)
		}
		got, err := io.ReadAll(rc)
		rc.Close()
		if err != nil {
			t.Fatalf("OpenRange(%d, %d): read: %v", r.offset, r.length, err)
		}
		want := data[r.offset:min(n, r.offset+r.length)]
		if !bytes.Equal(got, want) {
			t.Errorf("OpenRange(%d, %d) = %d bytes, want %d bytes equal to the object's", r.offset, r.length, len(got), len(want))
		}
	}
	if _, err := b.OpenRange(ctx, "ws/"+newWorkspace()+"/missing", 0, 1); !errors.Is(err, blob.ErrNotFound) {
		t.Errorf("OpenRange of a missing key = %v, want ErrNotFound", err)
	}
	if _, err := b.OpenRange(ctx, "../escape", 0, 1); !errors.Is(err, blob.ErrInvalidKey) {
		t.Errorf("OpenRange of an invalid key = %v, want ErrInvalidKey", err)
	}
}

// RefusingAddr returns a loopback address whose listener, held open until
// the test ends, resets every connection it accepts: a server that cannot
// be reached. Holding the port matters; an address merely closed can be
// taken by a parallel test's server, which then answers.
func RefusingAddr(t testing.TB) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			if tc, ok := c.(*net.TCPConn); ok {
				tc.SetLinger(0) // close with a reset, not an orderly end
			}
			c.Close()
		}
	}()
	return l.Addr().String()
}
