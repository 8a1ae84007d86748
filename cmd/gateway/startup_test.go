package main

import (
	"bytes"
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aigateway/gateway/configs"
)

// The test binary doubles as the gateway: with runMainVar set, TestMain runs
// main() on the remaining arguments, so start-up failures are observed as an
// operator sees them (exit status and stderr) without building anything.
const runMainVar = "GATEWAY_TEST_RUN_MAIN"

func TestMain(m *testing.M) {
	if os.Getenv(runMainVar) == "1" {
		os.Args = append([]string{"gateway"}, os.Args[1:]...)
		main()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// runGateway runs the gateway process with args and returns its exit code
// and stderr. The process must end within the time given.
func runGateway(t *testing.T, within time.Duration, args ...string) (int, string) {
	t.Helper()
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(os.Environ(), runMainVar+"=1", "GATEWAY_BYOK_ENCRYPTION_KEY="+testSealingKey)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		var exit *exec.ExitError
		if err != nil && !errors.As(err, &exit) {
			t.Fatalf("wait: %v", err)
		}
		return cmd.ProcessState.ExitCode(), stderr.String()
	case <-time.After(within):
		_ = cmd.Process.Kill()
		<-done
		t.Fatalf("gateway %v still running after %s; stderr:\n%s", args, within, stderr.String())
		return 0, ""
	}
}

// TestServeStartupFailures: every start-up fault ends the process with
// status 1 and one line on stderr naming the problem — never a panic, a
// stack or a hang.
func TestServeStartupFailures(t *testing.T) {
	t.Parallel()
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { taken.Close() }) // after the parallel subtests, which a defer would not wait for

	tests := []struct {
		name   string
		mutate func(t *testing.T, c *configs.Config)
		want   string
	}{
		{"broken catalog", func(t *testing.T, c *configs.Config) {
			path := filepath.Join(t.TempDir(), "models.yaml")
			if err := os.WriteFile(path, []byte("models:\n  - id: nope\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			c.Catalog.Path = path
		}, "catalog"},
		{"missing catalog", func(t *testing.T, c *configs.Config) {
			c.Catalog.Path = filepath.Join(t.TempDir(), "absent.yaml")
		}, "catalog"},
		{"unreachable postgres", func(t *testing.T, c *configs.Config) {
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			addr := ln.Addr().String()
			ln.Close() // nothing listens there now
			c.Metadata = configs.Metadata{Driver: "postgres", DSN: "postgres://app@" + addr + "/gateway?sslmode=disable"}
		}, "metadata store"},
		{"taken port", func(t *testing.T, c *configs.Config) {
			c.Server.Listen = taken.Addr().String()
		}, "address already in use"},
		{"unusable storage directory", func(t *testing.T, c *configs.Config) {
			file := filepath.Join(t.TempDir(), "a-file")
			if err := os.WriteFile(file, nil, 0o600); err != nil {
				t.Fatal(err)
			}
			c.Storage.FS.Dir = filepath.Join(file, "files")
		}, "storage"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel() // a configuration, directories and a process of its own
			cfg := testConfig(t)
			cfg.Server.Listen = "127.0.0.1:0"
			tc.mutate(t, &cfg)
			code, stderr := runGateway(t, 30*time.Second, "serve", "--config", writeConfig(t, cfg))
			if code != 1 {
				t.Errorf("exit status = %d, want 1; stderr:\n%s", code, stderr)
			}
			if strings.Contains(stderr, "panic") || strings.Contains(stderr, "goroutine ") {
				t.Errorf("stderr shows a panic:\n%s", stderr)
			}
			lines := strings.Split(strings.TrimRight(stderr, "\n"), "\n")
			last := lines[len(lines)-1]
			if !strings.HasPrefix(last, "gateway: ") || !strings.Contains(last, tc.want) {
				t.Errorf("last stderr line = %q, want one line \"gateway: …%s…\"", last, tc.want)
			}
		})
	}
}
