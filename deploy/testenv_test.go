package deploy

import (
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
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

// testenvLib runs script in bash with testenv/lib.sh sourced, with env
// added to the environment, and returns its output.
func testenvLib(t *testing.T, script string, env ...string) (string, error) {
	t.Helper()
	lib, err := filepath.Abs("testenv/lib.sh")
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("bash", "-c", `source "$1" && `+script, "bash", lib)
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// A run's servers start in the background, so a port is not bound yet
// when the next one is picked: free_port must never hand out one port
// twice in a run. (Drawn at random from about 22,000 ports, 1,000 picks
// repeat one with a probability above 99.99% without the claims.)
func TestFreePortNeverRepeatsInARun(t *testing.T) {
	out, err := testenvLib(t, `for i in $(seq 1000); do free_port || exit 1; done`,
		"TESTENV_PORT_CLAIMS="+t.TempDir())
	if err != nil {
		t.Fatalf("free_port: %v\n%s", err, out)
	}
	ports := strings.Fields(out)
	if len(ports) != 1000 {
		t.Fatalf("%d ports printed, want 1000", len(ports))
	}
	seen := map[string]bool{}
	for _, p := range ports {
		if seen[p] {
			t.Fatalf("port %s handed out twice", p)
		}
		seen[p] = true
	}
}

// redis_pings against a server that accepts and never answers (as a Redis
// Cluster node's bus port does) must fail, not wait for ever: a run whose
// ports collided once hung there for good.
func TestRedisPingOfASilentServerFails(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			defer c.Close() // held open, silent, until the test ends
		}
	}()
	port := strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
	done := make(chan error, 1)
	go func() {
		_, err := testenvLib(t, `redis_pings "$PORT"`, "PORT="+port)
		done <- err
	}()
	select {
	case err := <-done:
		if err == nil {
			t.Error("redis_pings succeeded against a server that never answered")
		}
	case <-time.After(30 * time.Second):
		t.Fatal("redis_pings still waiting after 30 s on a silent server")
	}
}
