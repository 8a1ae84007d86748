package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

// syncBuffer is stderr shared by the logger and the access log writer.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestServeWritesEveryAccessLineBeforeExit: the access log is buffered,
// and a clean shutdown writes all of it: one line per request answered,
// none lost at exit.
func TestServeWritesEveryAccessLineBeforeExit(t *testing.T) {
	t.Parallel()
	cfg := testConfig(t)
	cfg.Server.Listen = "127.0.0.1:0"
	cfg.Server.DrainDelay = 0
	cfg.Log.Level, cfg.Log.Format = "info", "json"
	path := writeConfig(t, cfg)
	var keyOut bytes.Buffer
	if err := runWith(context.Background(), []string{"keys", "create", "--config", path, "--name", "t", "--user", "u"},
		env{getenv: testGetenv, stdin: strings.NewReader(""), stdout: &keyOut, stderr: io.Discard}); err != nil {
		t.Fatal(err)
	}
	key := strings.TrimSpace(keyOut.String()[strings.LastIndexByte(strings.TrimSpace(keyOut.String()), '\n')+1:])

	stderr := &syncBuffer{}
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	addrc := make(chan string, 1)
	served := make(chan error, 1)
	go func() {
		served <- runWith(ctx, []string{"serve", "--config", path}, env{
			getenv: testGetenv, stdin: strings.NewReader(""), stdout: io.Discard, stderr: stderr,
			listening: func(a string) { addrc <- a },
		})
	}()
	var addr string
	select {
	case addr = <-addrc:
	case err := <-served:
		t.Fatalf("serve stopped: %v", err)
	case <-time.After(10 * time.Second):
		t.Fatal("serve did not listen within 10s")
	}

	const requests = 300
	statuses := map[int]int{}
	for i := range requests {
		req, _ := http.NewRequest("GET", "http://"+addr+"/api/v1/model/openai/gpt-4o", nil)
		if i%3 != 0 {
			req.Header.Set("Authorization", "Bearer "+key)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		statuses[resp.StatusCode]++
	}
	stop()
	select {
	case err := <-served:
		if err != nil {
			t.Fatalf("serve returned %v", err)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("serve did not return after shutdown")
	}

	logged := map[int]int{}
	n := 0
	for _, line := range strings.Split(stderr.String(), "\n") {
		if !strings.Contains(line, `"msg":"request"`) {
			continue
		}
		var f struct {
			Level, TS, Route, Method, Client, RequestID string
			Status                                      int
		}
		if err := json.Unmarshal([]byte(line), &f); err != nil {
			t.Fatalf("access line %q: %v", line, err)
		}
		if f.Level != "info" || f.Route != "/api/v1/model/{author}/{slug}" || f.Method != "GET" || f.Client != "127.0.0.1" {
			t.Errorf("access line %s", line)
		}
		if _, err := time.Parse("2006-01-02T15:04:05.000Z0700", f.TS); err != nil {
			t.Errorf("access line time %q: %v", f.TS, err)
		}
		logged[f.Status]++
		n++
	}
	if n != requests || logged[200] != statuses[200] || logged[401] != statuses[401] {
		t.Errorf("%d access lines (by status %v) for %d requests answered %v", n, logged, requests, statuses)
	}
}
