package fs_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/aigateway/gateway/backends/storage/storagetest"
	"github.com/aigateway/gateway/files/blob"
	"github.com/aigateway/gateway/internal/testenv"
)

// smallDisk mounts a tmpfs of size (a mount option: "256k", "8m") for the
// test, the one way to meet a full file system for real. It needs root;
// without it the test is skipped locally and fails under CI (which runs as
// root).
func smallDisk(t *testing.T, size string) string {
	t.Helper()
	dir := t.TempDir()
	out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size="+size, "tmpfs", dir).CombinedOutput()
	if err != nil {
		if testenv.InCI() {
			t.Fatalf("mount a small tmpfs: %v %s", err, out)
		}
		t.Skipf("cannot mount a small tmpfs (needs root): %v %s", err, out)
	}
	t.Cleanup(func() { _ = exec.Command("umount", "-l", dir).Run() })
	return dir
}

// TestFullDisk: readiness sees a full disk (a write fails while a stat would
// not), an upload fails as unavailable and leaves nothing, and freeing space
// brings both back.
func TestFullDisk(t *testing.T) {
	dir := smallDisk(t, "256k")
	b := newBucket(t, filepath.Join(dir, "files"))
	ctx := context.Background()
	if err := b.Check(ctx); err != nil {
		t.Fatalf("Check with free space: %v", err)
	}
	filler := filepath.Join(dir, "filler")
	f, err := os.Create(filler)
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := f.Write(make([]byte, 4096)); err != nil {
			break // the disk is full
		}
	}
	f.Close()

	if err := b.Check(ctx); !errors.Is(err, blob.ErrUnavailable) {
		t.Errorf("Check on a full disk = %v, want ErrUnavailable", err)
	}
	_, err = b.Upload(ctx, "ws/a/file-1", bytes.NewReader(make([]byte, 64<<10)), -1, blob.UploadOptions{})
	if !errors.Is(err, blob.ErrUnavailable) {
		t.Errorf("Upload on a full disk = %v, want ErrUnavailable", err)
	}
	if pending, err := b.PendingUploads(ctx); err != nil || len(pending) != 0 {
		t.Errorf("left behind: %v %v", pending, err)
	}

	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	if err := b.Check(ctx); err != nil {
		t.Errorf("Check after freeing space: %v", err)
	}
}

// TestStopsMidUpload: the fs meaning of a server stopping mid-upload is the
// disk refusing writes mid-upload. Removing the root directory instead would
// not do: the bucket holds the directory open, so a new one at the same path
// is not the same storage coming back.
func TestStopsMidUpload(t *testing.T) {
	// Room for the whole body (9 MiB), so that only the filling stops the
	// upload.
	dir := smallDisk(t, "16m")
	b := newBucket(t, filepath.Join(dir, "files"))
	filler := filepath.Join(dir, "filler")
	fill := func(t *testing.T) {
		f, err := os.Create(filler)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		for {
			_, err := f.Write(make([]byte, 64<<10))
			if errors.Is(err, syscall.ENOSPC) {
				return // the disk is full
			}
			if err != nil {
				t.Fatalf("filling the disk: %v", err)
			}
		}
	}
	free := func(t *testing.T) {
		if err := os.Remove(filler); err != nil {
			t.Fatal(err)
		}
	}
	storagetest.StopsMidUpload(t, b, fill, free)
}
