package fs_test

import (
	"bytes"
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
	"go.uber.org/zap/zaptest"
)

// linkedBucket is a bucket that links every source of 2 KiB or more into
// a composed object and copies smaller ones, so that the contract suite's
// small sources make composed objects of linked and copied segments.
func linkedBucket(t *testing.T, dir string) *fs.Bucket {
	b := newBucket(t, dir)
	b.SetLinkMin(2 << 10)
	return b
}

func TestContractLinked(t *testing.T) {
	storagetest.Run(t, func(t *testing.T) blob.Bucket { return linkedBucket(t, t.TempDir()) })
}

func TestComposeCrashLinked(t *testing.T) {
	b := linkedBucket(t, t.TempDir())
	storagetest.ComposeCrash(t, b, b.CrashMidCompose)
}

// composedFixture stores three sources (two linked, one copied between
// them) and composes them under dst.
func composedFixture(t *testing.T, b *fs.Bucket, dst string) (srcs []string, want []byte) {
	t.Helper()
	var all [][]byte
	for i, n := range []int{5000, 100, 7000} {
		key := "up/" + string(rune('a'+i))
		data := storagetest.Data(uint64(i+1), n)
		storagetest.MustUpload(t, b, key, data)
		srcs, all = append(srcs, key), append(all, data)
	}
	if _, err := b.Compose(context.Background(), dst, srcs, blob.UploadOptions{}); err != nil {
		t.Fatalf("Compose: %v", err)
	}
	return srcs, bytes.Join(all, nil)
}

// entries lists a directory of the bucket's root.
func entries(t *testing.T, dir string) []string {
	t.Helper()
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range es {
		names = append(names, e.Name())
	}
	return names
}

// A large source is linked, not copied: the composed object's segment is
// the source's own file.
func TestComposeLinksLargeSources(t *testing.T) {
	dir := t.TempDir()
	b := linkedBucket(t, dir)
	srcs, want := composedFixture(t, b, "ws/1/f")
	seg := b.SegmentDir("ws/1/f")
	if seg == "" {
		t.Fatal("ws/1/f is not a composed object")
	}
	src, err := os.Stat(filepath.Join(dir, srcs[0]))
	if err != nil {
		t.Fatal(err)
	}
	first, err := os.Stat(filepath.Join(dir, seg, "000000"))
	if err != nil {
		t.Fatal(err)
	}
	if !os.SameFile(src, first) {
		t.Error("the first segment is a copy of its source, not a link to it")
	}
	if got := entries(t, filepath.Join(dir, seg)); len(got) != 4 { // two links, one copy, the owner
		t.Errorf("segment directory holds %q, want 3 segments and the owner", got)
	}
	// The parts go as the resumable upload's completion removes them; the
	// object stays whole.
	for _, s := range srcs {
		if err := b.Delete(context.Background(), s); err != nil {
			t.Fatal(err)
		}
	}
	storagetest.MustContain(t, b, "ws/1/f", want)
	if obj, err := b.Stat(context.Background(), "ws/1/f"); err != nil || obj.Size != int64(len(want)) {
		t.Errorf("Stat = %+v, %v; want %d bytes", obj, err, len(want))
	}
}

// Deleting or replacing a composed object removes its segments; nothing is
// left in .composed or .tmp.
func TestComposedObjectLeavesNothing(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	b := linkedBucket(t, dir)
	composedFixture(t, b, "ws/1/deleted")
	if err := b.Delete(ctx, "ws/1/deleted"); err != nil {
		t.Fatal(err)
	}
	storagetest.MustUpload(t, b, "ws/1/other", []byte("x"))
	srcs, _ := composedFixture(t, b, "ws/1/uploaded-over")
	storagetest.MustUpload(t, b, "ws/1/uploaded-over", []byte("plain"))
	composedFixture(t, b, "ws/1/composed-over")
	_, want := composedFixture(t, b, "ws/1/composed-over")
	storagetest.MustContain(t, b, "ws/1/uploaded-over", []byte("plain"))
	storagetest.MustContain(t, b, "ws/1/composed-over", want)
	if got := entries(t, filepath.Join(dir, fs.ComposedDir)); len(got) != 1 {
		t.Errorf(".composed holds %q, want the one live object's segments", got)
	}
	storagetest.NoLeftovers(t, b, append(srcs, "ws/1/composed-over", "ws/1/other", "ws/1/uploaded-over")...)
	if err := b.Delete(ctx, "ws/1/composed-over"); err != nil {
		t.Fatal(err)
	}
	if got := entries(t, filepath.Join(dir, fs.ComposedDir)); len(got) != 0 {
		t.Errorf(".composed holds %q after the last composed object's delete", got)
	}
}

// An object opened before its delete reads whole; after it, Open and Stat
// say ErrNotFound.
func TestComposedObjectOpenSurvivesDelete(t *testing.T) {
	ctx := context.Background()
	b := linkedBucket(t, t.TempDir())
	_, want := composedFixture(t, b, "ws/1/f")
	rc, err := b.Open(ctx, "ws/1/f")
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	ranged, err := b.OpenRange(ctx, "ws/1/f", 4990, 200)
	if err != nil {
		t.Fatal(err)
	}
	defer ranged.Close()
	if err := b.Delete(ctx, "ws/1/f"); err != nil {
		t.Fatal(err)
	}
	if got, err := io.ReadAll(rc); err != nil || !bytes.Equal(got, want) {
		t.Errorf("read after delete: %d bytes, %v; want the whole %d", len(got), err, len(want))
	}
	if got, err := io.ReadAll(ranged); err != nil || !bytes.Equal(got, want[4990:5190]) {
		t.Errorf("ranged read across segments after delete: %d bytes, %v", len(got), err)
	}
	if _, err := b.Open(ctx, "ws/1/f"); !errors.Is(err, blob.ErrNotFound) {
		t.Errorf("Open after delete = %v, want ErrNotFound", err)
	}
	if _, err := b.Stat(ctx, "ws/1/f"); !errors.Is(err, blob.ErrNotFound) {
		t.Errorf("Stat after delete = %v, want ErrNotFound", err)
	}
}

// A segment directory whose link is gone (a crash between the link's
// removal and its own) is removed by New once stale; a live one stays.
func TestOrphanedSegmentsRemovedAtStart(t *testing.T) {
	dir := t.TempDir()
	b := linkedBucket(t, dir)
	composedFixture(t, b, "ws/1/live")
	composedFixture(t, b, "ws/1/orphan")
	composedFixture(t, b, "ws/1/replaced")
	live, orphan, replaced := b.SegmentDir("ws/1/live"), b.SegmentDir("ws/1/orphan"), b.SegmentDir("ws/1/replaced")
	if err := os.Remove(filepath.Join(dir, "ws/1/orphan")); err != nil { // the link, as a crashed delete leaves it
		t.Fatal(err)
	}
	// A regular file where the link was, as a crashed replacement leaves it.
	if err := os.Remove(filepath.Join(dir, "ws/1/replaced")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "ws/1/replaced"), []byte("plain"), 0o640); err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-2 * time.Hour)
	for _, seg := range []string{live, orphan, replaced} {
		if err := os.Chtimes(filepath.Join(dir, seg), old, old); err != nil {
			t.Fatal(err)
		}
	}
	b.Close()
	b2, err := fs.New(fs.Config{Dir: dir}, zaptest.NewLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	defer b2.Close()
	for _, seg := range []string{orphan, replaced} {
		if _, err := os.Stat(filepath.Join(dir, seg)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("orphaned segments %s still there: %v", seg, err)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, live)); err != nil {
		t.Errorf("live segments %s removed: %v", live, err)
	}
	if _, err := b2.Stat(context.Background(), "ws/1/live"); err != nil {
		t.Errorf("Stat of the live composed object after restart: %v", err)
	}
}

// A segment removed behind the bucket's back makes the object missing,
// never a short read that looks whole.
func TestComposedObjectMissingSegment(t *testing.T) {
	dir := t.TempDir()
	b := linkedBucket(t, dir)
	composedFixture(t, b, "ws/1/f")
	if err := os.Remove(filepath.Join(dir, b.SegmentDir("ws/1/f"), "000001")); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Open(context.Background(), "ws/1/f"); !errors.Is(err, blob.ErrNotFound) {
		t.Errorf("Open with a segment gone = %v, want ErrNotFound", err)
	}
}
