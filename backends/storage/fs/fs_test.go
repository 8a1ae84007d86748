package fs_test

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/aigateway/gateway/backends/storage/fs"
	"github.com/aigateway/gateway/backends/storage/storagetest"
	"github.com/aigateway/gateway/files/blob"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest"
)

func newBucket(t *testing.T, dir string) *fs.Bucket {
	t.Helper()
	b, err := fs.New(fs.Config{Dir: dir}, zaptest.NewLogger(t))
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() { b.Close() })
	return b
}

func TestContract(t *testing.T) {
	storagetest.Run(t, func(t *testing.T) blob.Bucket { return newBucket(t, t.TempDir()) })
}

// TestPrefix: fs has no key prefix setting of its own; its root directory is
// the prefix. A bucket rooted at a sub-directory of a tree keeps its keys
// under that sub-directory and sees nothing of the rest of the tree, which
// is the storage behind its back.
func TestPrefix(t *testing.T) {
	tree := t.TempDir()
	path := func(name string) string { return filepath.Join(tree, filepath.FromSlash(name)) }
	storagetest.Prefix(t, storagetest.PrefixStore{
		NewBucket: func(t *testing.T, prefix string) blob.Bucket { return newBucket(t, path(prefix)) },
		Put: func(t *testing.T, name string, data []byte) {
			if err := os.MkdirAll(filepath.Dir(path(name)), 0o750); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path(name), data, 0o640); err != nil {
				t.Fatal(err)
			}
		},
		Get: func(t *testing.T, name string) ([]byte, bool) {
			data, err := os.ReadFile(path(name))
			if errors.Is(err, os.ErrNotExist) {
				return nil, false
			}
			if err != nil {
				t.Fatal(err)
			}
			return data, true
		},
	})
}

// TestMissingBucket: the bucket's root directory no longer exists (New
// creates a missing root, so a root can only go missing later).
func TestMissingBucket(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "files")
	b := newBucket(t, dir)
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	storagetest.MissingBucket(t, b)
}

// TestUnreachableIsUnavailable: the bucket's root is unusable. A regular
// file where the directory was bites as root too, unlike permission bits.
func TestUnreachableIsUnavailable(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "files")
	b := newBucket(t, dir)
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dir, []byte("not a directory"), 0o640); err != nil {
		t.Fatal(err)
	}
	storagetest.Unreachable(t, b)
}

func TestNewCreatesDirectory(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "a", "b")
	newBucket(t, dir)
	info, err := os.Stat(dir)
	if err != nil {
		t.Fatalf("Stat: %v", err)
	}
	if perm := info.Mode().Perm(); perm&0o027 != 0 || !info.IsDir() {
		t.Errorf("created %s with mode %v, want a directory no wider than 0750", dir, info.Mode())
	}
}

func TestNewRequiresDir(t *testing.T) {
	_, err := fs.New(fs.Config{}, zaptest.NewLogger(t))
	if !errors.Is(err, blob.ErrInvalidConfig) {
		t.Fatalf("New with no dir = %v, want ErrInvalidConfig", err)
	}
}

// Objects are plain files at their key's path, so operators can inspect
// and back them up with ordinary tools.
func TestLayout(t *testing.T) {
	dir := t.TempDir()
	b := newBucket(t, dir)
	storagetest.MustUpload(t, b, "ws/1/f", []byte("hello"))
	got, err := os.ReadFile(filepath.Join(dir, "ws", "1", "f"))
	if err != nil || string(got) != "hello" {
		t.Fatalf("file at the key's path = %q, %v; want hello", got, err)
	}
	info, _ := os.Stat(filepath.Join(dir, "ws", "1", "f"))
	if perm := info.Mode().Perm(); perm&0o037 != 0 {
		t.Errorf("object mode %v, want no wider than 0640", perm)
	}
}

// A symlink planted inside the root cannot lead a key outside it.
func TestSymlinkCannotEscapeRoot(t *testing.T) {
	dir, outside := t.TempDir(), t.TempDir()
	b := newBucket(t, dir)
	if err := os.WriteFile(filepath.Join(outside, "secret"), []byte("secret"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(dir, "ws")); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if rc, err := b.Open(ctx, "ws/secret"); err == nil {
		rc.Close()
		t.Fatal("Open through a symlink leaving the root succeeded")
	}
	if _, err := b.Upload(ctx, "ws/planted", storagetest.ChunkedReader([]byte("x")), 1, blob.UploadOptions{}); err == nil {
		t.Fatal("Upload through a symlink leaving the root succeeded")
	}
	if _, err := os.Stat(filepath.Join(outside, "planted")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a file was written outside the root: %v", err)
	}
	storagetest.NoLeftovers(t, b)
}

// A reader sees the previous object or the complete new one, never a
// partial file, even while an upload is half written.
func TestNoPartialObjectVisible(t *testing.T) {
	b := newBucket(t, t.TempDir())
	key := "ws/1/f"
	old := storagetest.Data(1, 1000)
	storagetest.MustUpload(t, b, key, old)

	pr, pw := io.Pipe()
	done := make(chan error, 1)
	go func() {
		_, err := b.Upload(context.Background(), key, pr, -1, blob.UploadOptions{})
		done <- err
	}()
	// The first write returns only once Upload has consumed it, so the
	// temporary file exists and holds data when we look.
	if _, err := pw.Write(storagetest.Data(2, 300<<10)); err != nil {
		t.Fatal(err)
	}
	storagetest.MustContain(t, b, key, old)
	pending, err := b.PendingUploads(context.Background())
	if err != nil || len(pending) != 1 {
		t.Errorf("while uploading, PendingUploads = %q, %v; want one temporary file", pending, err)
	}
	pw.Close()
	if err := <-done; err != nil {
		t.Fatalf("Upload: %v", err)
	}
	storagetest.MustContain(t, b, key, storagetest.Data(2, 300<<10))
	storagetest.NoLeftovers(t, b, key)
}

// Temporary files left by a crashed process are removed at the next start
// once they are old enough; recent ones may belong to a live upload.
func TestNewRemovesStaleTemporaryFiles(t *testing.T) {
	dir := t.TempDir()
	b := newBucket(t, dir)
	b.Close()
	stale, fresh := filepath.Join(dir, ".tmp", "stale.part"), filepath.Join(dir, ".tmp", "fresh.part")
	for _, f := range []string{stale, fresh} {
		if err := os.WriteFile(f, []byte("x"), 0o640); err != nil {
			t.Fatal(err)
		}
	}
	old := time.Now().Add(-2 * time.Hour)
	if err := os.Chtimes(stale, old, old); err != nil {
		t.Fatal(err)
	}
	newBucket(t, dir)
	if _, err := os.Stat(stale); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("stale temporary file still there: %v", err)
	}
	if _, err := os.Stat(fresh); err != nil {
		t.Errorf("recent temporary file removed: %v", err)
	}
}

func TestClosedBucketIsUnavailable(t *testing.T) {
	b := newBucket(t, t.TempDir())
	b.Close()
	_, err := b.Upload(context.Background(), "ws/1/f", storagetest.ChunkedReader([]byte("x")), 1, blob.UploadOptions{})
	if !errors.Is(err, blob.ErrUnavailable) {
		t.Errorf("Upload after Close = %v, want ErrUnavailable", err)
	}
	if _, err := b.Stat(context.Background(), "ws/1/f"); !errors.Is(err, blob.ErrUnavailable) {
		t.Errorf("Stat after Close = %v, want ErrUnavailable", err)
	}
}

func TestComposeCrash(t *testing.T) {
	b := newBucket(t, t.TempDir())
	storagetest.ComposeCrash(t, b, b.CrashMidCompose)
}

// BenchmarkCompose: 32 parts of 8 MiB composed, against the same 256 MiB
// uploaded as one object.
func BenchmarkCompose(b *testing.B) {
	dir, err := os.MkdirTemp("", "fs-bench-")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { os.RemoveAll(dir) })
	bucket, err := fs.New(fs.Config{Dir: dir}, zap.NewNop())
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { bucket.Close() })
	storagetest.ComposeVsUpload(b, bucket, 32, 8*storagetest.MiB)
}
