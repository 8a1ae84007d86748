package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"mime/multipart"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestServeRefusesBadConfigBeforeListening: every problem is named and no
// socket is ever opened.
func TestServeRefusesBadConfigBeforeListening(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "bad.yaml")
	bad := "server:\n  listen: \"127.0.0.1:0\"\n  listn: typo\nlog:\n  level: loud\nlimits:\n  max_file_bytes: lots\n"
	if err := os.WriteFile(path, []byte(bad), 0o600); err != nil {
		t.Fatal(err)
	}
	listened := false
	err := runWith(context.Background(), []string{"serve", "--config", path}, env{
		getenv: testGetenv, stdin: strings.NewReader(""), stdout: io.Discard, stderr: io.Discard,
		listening: func(string) { listened = true },
	})
	if err == nil {
		t.Fatal("serve accepted a bad config")
	}
	for _, want := range []string{"server.listn: unknown key"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not name %q", err, want)
		}
	}
	if listened {
		t.Error("serve listened before refusing its config")
	}

	// Type and value problems are reported together once keys are known.
	if err := os.WriteFile(path, []byte("log:\n  level: loud\nlimits:\n  max_file_bytes: lots\n  uploads_in_flight_per_key: 0\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	err = runWith(context.Background(), []string{"serve", "--config", path}, env{getenv: testGetenv, stdout: io.Discard, stderr: io.Discard})
	if err == nil || !strings.Contains(err.Error(), "limits.max_file_bytes") {
		t.Fatalf("serve error = %v, want limits.max_file_bytes named", err)
	}
}

func TestUnknownCommand(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{nil, {"frobnicate"}, {"keys"}, {"byok", "get"}} {
		if err := runWith(context.Background(), args, env{getenv: testGetenv, stdout: io.Discard, stderr: io.Discard}); err == nil {
			t.Errorf("run %v: want a usage error", args)
		}
	}
}

// TestServeDrainsOnShutdown: after the signal (ctx cancelled) /readyz fails
// during the drain delay, an upload in flight finishes within the grace
// period, and new connections are refused once the listener closes.
func TestServeDrainsOnShutdown(t *testing.T) {
	t.Parallel()
	cfg := testConfig(t)
	cfg.Server.Listen = "127.0.0.1:0"
	cfg.Server.DrainDelay = 300 * time.Millisecond
	cfg.Server.ShutdownGrace = 20 * time.Second
	path := writeConfig(t, cfg)
	e := env{getenv: testGetenv, stdin: strings.NewReader(""), stderr: io.Discard}
	var keyOut bytes.Buffer
	e.stdout = &keyOut
	if err := runWith(context.Background(), []string{"keys", "create", "--config", path, "--name", "t", "--user", "u"}, e); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(keyOut.String()), "\n")
	key := lines[len(lines)-1]

	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	addrc := make(chan string, 1)
	e.stdout = io.Discard
	e.listening = func(a string) { addrc <- a }
	served := make(chan error, 1)
	go func() { served <- runWith(ctx, []string{"serve", "--config", path}, e) }()
	var addr string
	select {
	case addr = <-addrc:
	case err := <-served:
		t.Fatalf("serve stopped: %v", err)
	case <-time.After(10 * time.Second):
		t.Fatal("serve did not listen within 10s")
	}
	base := "http://" + addr
	if resp, err := http.Get(base + "/healthz"); err != nil || resp.StatusCode != 200 {
		t.Fatalf("healthz: %v %v", resp, err)
	}

	// A slow upload: the body is written in two halves around the signal.
	pr, pw := io.Pipe()
	mw := multipart.NewWriter(pw)
	req, _ := http.NewRequest("POST", base+"/api/v1/files", pr)
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", mw.FormDataContentType())
	type result struct {
		status int
		body   string
		err    error
	}
	uploaded := make(chan result, 1)
	go func() {
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			uploaded <- result{err: err}
			return
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		uploaded <- result{status: resp.StatusCode, body: string(b)}
	}()
	part, err := mw.CreateFormFile("file", "slow.txt")
	if err != nil {
		t.Fatal(err)
	}
	half := bytes.Repeat([]byte("slow but steady\n"), 4096)
	if _, err := part.Write(half); err != nil {
		t.Fatal(err)
	}

	stop() // SIGTERM

	// While draining, readyz fails but the listener still answers.
	deadline := time.Now().Add(5 * time.Second)
	for {
		resp, err := http.Get(base + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusServiceUnavailable {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatal("readyz never failed after the shutdown signal")
		}
		time.Sleep(10 * time.Millisecond) // poll interval, bounded by the deadline
	}
	// Then the listener closes: new connections are refused.
	for {
		conn, err := net.DialTimeout("tcp", addr, time.Second)
		if err != nil {
			var opErr *net.OpError
			if !errors.As(err, &opErr) {
				t.Fatalf("dial: %v", err)
			}
			break
		}
		conn.Close()
		if time.Now().After(deadline) {
			t.Fatal("new connections still accepted after the drain delay")
		}
		time.Sleep(10 * time.Millisecond) // poll interval, bounded by the deadline
	}
	// The upload in flight finishes.
	if _, err := part.Write(half); err != nil {
		t.Fatal(err)
	}
	if err := mw.Close(); err != nil {
		t.Fatal(err)
	}
	pw.Close()
	select {
	case r := <-uploaded:
		if r.err != nil || r.status != 200 {
			t.Fatalf("upload in flight = %d %s %v, want 200", r.status, r.body, r.err)
		}
		if !strings.Contains(r.body, fmt.Sprintf(`"size_bytes":%d`, 2*len(half))) {
			t.Errorf("upload answer %s lacks the full size", r.body)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("upload in flight did not finish within the grace period")
	}
	select {
	case err := <-served:
		if err != nil {
			t.Fatalf("serve returned %v", err)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("serve did not return after shutdown")
	}
}

// TestServeListenAndWelcome: --listen overrides the configured address and
// GATEWAY_LISTEN, which overrides the configuration; once listening, serve
// prints where the console is as a plain line, every start.
func TestServeListenAndWelcome(t *testing.T) {
	t.Parallel()
	cfg := testConfig(t)
	cfg.Server.Listen = "127.0.0.1:1" // never used: every case overrides it
	cfg.Console.Enabled = true
	path := writeConfig(t, cfg)
	free := func() string {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer ln.Close()
		return ln.Addr().String()
	}
	for _, tc := range []struct {
		name string
		flag string
		env  string
	}{
		{name: "flag", flag: "127.0.0.1:0"},
		{name: "environment", env: "127.0.0.1:0"},
		{name: "flag over environment", flag: "127.0.0.1:0", env: free()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := []string{"serve", "--config", path}
			if tc.flag != "" {
				args = append(args, "--listen", tc.flag)
			}
			getenv := func(name string) string {
				if name == "GATEWAY_LISTEN" {
					return tc.env
				}
				return testGetenv(name)
			}
			ctx, stop := context.WithCancel(context.Background())
			defer stop()
			// Written before listening is told, so read safely after it.
			var out bytes.Buffer
			addrc := make(chan string, 1)
			served := make(chan error, 1)
			go func() {
				served <- runWith(ctx, args, env{getenv: getenv, stdin: strings.NewReader(""), stdout: &out, stderr: io.Discard,
					listening: func(a string) { addrc <- a }})
			}()
			var addr string
			select {
			case addr = <-addrc:
			case err := <-served:
				t.Fatalf("serve stopped: %v", err)
			case <-time.After(10 * time.Second):
				t.Fatal("serve did not listen within 10s")
			}
			if tc.env != "" && tc.flag != "" && addr == tc.env {
				t.Errorf("listening on %s from the environment, want the flag's address", addr)
			}
			if want := "Gateway console: http://" + addr + "/console/\n"; !strings.HasPrefix(out.String(), want) {
				t.Errorf("stdout %q, want it to start with %q", out.String(), want)
			}
			resp, err := http.Get("http://" + addr + "/healthz")
			if err != nil || resp.StatusCode != http.StatusOK {
				t.Fatalf("healthz on %s: %v %v", addr, resp, err)
			}
			resp.Body.Close()
			stop()
			if err := <-served; err != nil {
				t.Fatal(err)
			}
		})
	}

	err := runWith(context.Background(), []string{"serve", "--config", path, "--listen", "nowhere"},
		env{getenv: testGetenv, stdout: io.Discard, stderr: io.Discard})
	if err == nil || !strings.Contains(err.Error(), "server.listen") {
		t.Errorf("serve --listen nowhere: %v, want the address refused naming server.listen", err)
	}
}
