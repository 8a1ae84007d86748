package deploy

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// linkToolCache runs testenv/lib.sh's link_tool_cache on root with the
// user's cache at cache, and returns what root/.testenv/bin then is: the
// target of a link, or "" for a directory.
func linkToolCache(t *testing.T, root, cache string) string {
	t.Helper()
	lib, err := filepath.Abs("testenv/lib.sh")
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("bash", "-c", `source "$1" && link_tool_cache "$2"`, "bash", lib, root)
	cmd.Env = append(os.Environ(), "XDG_CACHE_HOME="+cache)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("link_tool_cache: %v\n%s", err, out)
	}
	bin := filepath.Join(root, ".testenv", "bin")
	fi, err := os.Stat(bin)
	if err != nil {
		t.Fatalf(".testenv/bin after link_tool_cache: %v", err)
	}
	if !fi.IsDir() {
		t.Fatalf(".testenv/bin is not a directory")
	}
	target, err := os.Readlink(bin)
	if err != nil {
		return ""
	}
	return target
}

func TestTestServersShareOneCache(t *testing.T) {
	cache := t.TempDir()
	shared := filepath.Join(cache, "aigateway-testenv") + string(filepath.Separator)

	t.Run("a fresh clone links the cache", func(t *testing.T) {
		root := t.TempDir()
		if got := linkToolCache(t, root, cache); !strings.HasPrefix(got, shared) {
			t.Errorf(".testenv/bin -> %q, want a directory under %s", got, shared)
		}
	})

	// A run must not fail because the cache a clone linked to was cleared
	// since (by hand, or a CI machine's cache clean-up).
	t.Run("a link to a removed cache is made again", func(t *testing.T) {
		root := t.TempDir()
		gone := filepath.Join(t.TempDir(), "removed")
		if err := os.MkdirAll(filepath.Join(root, ".testenv"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(gone, filepath.Join(root, ".testenv", "bin")); err != nil {
			t.Fatal(err)
		}
		if got := linkToolCache(t, root, cache); !strings.HasPrefix(got, shared) {
			t.Errorf(".testenv/bin -> %q, want a directory under %s", got, shared)
		}
	})

	t.Run("a directory of its own is kept", func(t *testing.T) {
		root := t.TempDir()
		own := filepath.Join(root, ".testenv", "bin")
		if err := os.MkdirAll(own, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(own, "versitygw"), []byte("#!/bin/sh\n"), 0o755); err != nil {
			t.Fatal(err)
		}
		if got := linkToolCache(t, root, cache); got != "" {
			t.Errorf(".testenv/bin became a link to %q; a directory must stay", got)
		}
		if _, err := os.Stat(filepath.Join(own, "versitygw")); err != nil {
			t.Errorf("a binary in the clone's own directory is gone: %v", err)
		}
	})
}
