package fs

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aigateway/gateway/files/blob"
	"go.uber.org/zap/zaptest"
)

// Deleting a directory's last object removes the directories it emptied,
// and only those; a listing of a prefix with nothing under it is empty.
func TestDeleteRemovesEmptiedDirectories(t *testing.T) {
	dir := t.TempDir()
	b, err := New(Config{Dir: dir}, zaptest.NewLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	ctx := context.Background()
	for _, key := range []string{"up/w/u/p1", "up/w/u/p2", "up/w/v/p3"} {
		if _, err := b.Upload(ctx, key, strings.NewReader("x"), 1, blob.UploadOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	for _, key := range []string{"up/w/u/p1", "up/w/u/p2"} {
		if err := b.Delete(ctx, key); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "up/w/u")); !os.IsNotExist(err) {
		t.Errorf("the emptied directory up/w/u: %v, want it gone", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "up/w/v/p3")); err != nil {
		t.Errorf("the sibling object: %v", err)
	}
	if err := b.Delete(ctx, "up/w/v/p3"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "up")); !os.IsNotExist(err) {
		t.Errorf("up: %v, want it gone with its last object", err)
	}
	if keys, err := b.List(ctx, "up/"); err != nil || len(keys) != 0 {
		t.Errorf("List(up/) = %v, %v; want nothing", keys, err)
	}
}

// A write whose directory was removed after it made it (a concurrent
// Delete emptied it) makes it again.
func TestWriteRemakesARemovedDirectory(t *testing.T) {
	dir := t.TempDir()
	b, err := New(Config{Dir: dir}, zaptest.NewLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	tmp, f, err := b.createTemp()
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	if err := b.rename(tmp, "ws/a/f1", "ws/a"); err != nil {
		t.Fatalf("rename into a directory that is gone: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "ws/a/f1")); err != nil {
		t.Error(err)
	}
}

// A file where the bucket keeps its own directories stops New with their
// name, rather than failing every upload later.
func TestNewRefusesFileInPlaceOfItsDirectories(t *testing.T) {
	for _, name := range []string{".tmp", ".composed"} {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, name), nil, 0o600); err != nil {
			t.Fatal(err)
		}
		if b, err := New(Config{Dir: dir}, zaptest.NewLogger(t)); err == nil || !strings.Contains(err.Error(), name) {
			if b != nil {
				b.Close()
			}
			t.Errorf("New with a file named %s in the root = %v, want an error naming it", name, err)
		}
	}
}
