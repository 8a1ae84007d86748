package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// newTestClient is a client of srv whose waits are recorded, not slept.
func newTestClient(t *testing.T, srv *httptest.Server, opts ...Option) (*Client, *[]time.Duration) {
	t.Helper()
	c, err := New(srv.URL, "sk-test", opts...)
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	waits := &[]time.Duration{}
	c.sleep = func(ctx context.Context, d time.Duration) error {
		mu.Lock()
		defer mu.Unlock()
		*waits = append(*waits, d)
		return ctx.Err()
	}
	return c, waits
}

func writeEnvelope(w http.ResponseWriter, status int, message string, metadata any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]any{"error": map[string]any{"code": status, "message": message, "metadata": metadata}})
}

// refuseThenServe answers the first n requests with status (and
// Retry-After when given), then 200 with body.
func refuseThenServe(n int, status int, retryAfter, body string) (http.HandlerFunc, *atomic.Int32) {
	var calls atomic.Int32
	return func(w http.ResponseWriter, r *http.Request) {
		if int(calls.Add(1)) <= n {
			if retryAfter != "" {
				w.Header().Set("Retry-After", retryAfter)
			}
			writeEnvelope(w, status, http.StatusText(status), nil)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, body)
	}, &calls
}

const modelBody = `{"data":{"id":"openai/gpt-4o","name":"GPT-4o","pricing":{"prompt":"0.0000025","completion":"0.00001"}}}`

func TestRetryHonoursRetryAfterWithJitter(t *testing.T) {
	for _, status := range []int{429, 503} {
		t.Run(strconv.Itoa(status), func(t *testing.T) {
			h, calls := refuseThenServe(2, status, "2", modelBody)
			srv := httptest.NewServer(h)
			defer srv.Close()
			c, waits := newTestClient(t, srv)
			m, err := c.GetModel(context.Background(), "openai/gpt-4o")
			if err != nil {
				t.Fatal(err)
			}
			if m.Pricing.Prompt != "0.0000025" {
				t.Errorf("prompt price = %q", m.Pricing.Prompt)
			}
			if calls.Load() != 3 || len(*waits) != 2 {
				t.Fatalf("%d calls and waits %v, want 3 calls after 2 waits", calls.Load(), *waits)
			}
			for _, w := range *waits {
				if w < 2*time.Second || w >= 3*time.Second {
					t.Errorf("wait %v, want Retry-After (2s) plus up to half of it", w)
				}
			}
		})
	}
}

func TestRetryBackoffWithoutRetryAfter(t *testing.T) {
	h, _ := refuseThenServe(3, 503, "", modelBody)
	srv := httptest.NewServer(h)
	defer srv.Close()
	c, waits := newTestClient(t, srv, WithRetry(Retry{MaxAttempts: 4, MaxWait: time.Second, BaseDelay: 100 * time.Millisecond}))
	c.jitter = func(time.Duration) time.Duration { return 0 }
	if _, err := c.GetModel(context.Background(), "openai/gpt-4o"); err != nil {
		t.Fatal(err)
	}
	want := []time.Duration{100 * time.Millisecond, 200 * time.Millisecond, 400 * time.Millisecond}
	if fmt.Sprint(*waits) != fmt.Sprint(want) {
		t.Errorf("waits %v, want %v", *waits, want)
	}
}

func TestRetryIsBounded(t *testing.T) {
	t.Run("attempts", func(t *testing.T) {
		h, calls := refuseThenServe(100, 503, "1", modelBody)
		srv := httptest.NewServer(h)
		defer srv.Close()
		c, _ := newTestClient(t, srv, WithRetry(Retry{MaxAttempts: 3, MaxWait: 10 * time.Second}))
		_, err := c.GetModel(context.Background(), "openai/gpt-4o")
		var apiErr *Error
		if !errors.As(err, &apiErr) || apiErr.StatusCode != 503 || apiErr.RetryAfter != time.Second {
			t.Fatalf("err = %v, want the 503 *Error with its Retry-After", err)
		}
		if calls.Load() != 3 {
			t.Errorf("%d calls, want MaxAttempts = 3", calls.Load())
		}
	})
	t.Run("Retry-After past MaxWait", func(t *testing.T) {
		h, calls := refuseThenServe(100, 429, "120", modelBody)
		srv := httptest.NewServer(h)
		defer srv.Close()
		c, waits := newTestClient(t, srv)
		_, err := c.GetModel(context.Background(), "openai/gpt-4o")
		var apiErr *Error
		if !errors.As(err, &apiErr) || apiErr.RetryAfter != 120*time.Second {
			t.Fatalf("err = %v, want the 429 with Retry-After 120s", err)
		}
		if calls.Load() != 1 || len(*waits) != 0 {
			t.Errorf("%d calls, waits %v: a wait past MaxWait must be left to the caller", calls.Load(), *waits)
		}
	})
	t.Run("Retry-After past the deadline", func(t *testing.T) {
		h, calls := refuseThenServe(100, 429, "5", modelBody)
		srv := httptest.NewServer(h)
		defer srv.Close()
		c, _ := newTestClient(t, srv)
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		if _, err := c.GetModel(ctx, "openai/gpt-4o"); err == nil || calls.Load() != 1 {
			t.Errorf("err %v after %d calls, want the 429 at once", err, calls.Load())
		}
	})
	t.Run("context ends during the wait", func(t *testing.T) {
		h, _ := refuseThenServe(100, 503, "20", modelBody)
		srv := httptest.NewServer(h)
		defer srv.Close()
		c, err := New(srv.URL, "k") // real sleeping
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		c.sleep = func(ctx context.Context, d time.Duration) error {
			cancel() // the caller gives up while the client waits
			return sleepCtx(ctx, d)
		}
		start := time.Now()
		_, err = c.GetModel(ctx, "openai/gpt-4o")
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("err = %v, want context.Canceled", err)
		}
		var apiErr *Error
		if !errors.As(err, &apiErr) || apiErr.StatusCode != 503 {
			t.Errorf("err = %v, want the 503 kept alongside", err)
		}
		if time.Since(start) > 10*time.Second {
			t.Error("the wait outlived the context")
		}
	})
}

func TestNoRetryForOtherStatuses(t *testing.T) {
	for _, status := range []int{400, 404, 500, 502} {
		h, calls := refuseThenServe(1, status, "1", modelBody)
		srv := httptest.NewServer(h)
		c, _ := newTestClient(t, srv)
		_, err := c.GetModel(context.Background(), "openai/gpt-4o")
		var apiErr *Error
		if !errors.As(err, &apiErr) || apiErr.StatusCode != status || calls.Load() != 1 {
			t.Errorf("%d: err %v after %d calls, want the error at once", status, err, calls.Load())
		}
		srv.Close()
	}
}

// An upload is streamed once and never sent again, whatever the answer.
func TestUploadIsNeverRetried(t *testing.T) {
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Retry-After", "1")
		writeEnvelope(w, 503, "Service temporarily unavailable", nil)
	}))
	defer srv.Close()
	c, waits := newTestClient(t, srv)
	_, err := c.UploadFile(context.Background(), Upload{Filename: "a.txt", Content: strings.NewReader("hello"), Size: 5})
	var apiErr *Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != 503 || apiErr.RetryAfter != time.Second {
		t.Fatalf("err = %v, want the 503 with its Retry-After", err)
	}
	if calls.Load() != 1 || len(*waits) != 0 {
		t.Errorf("%d calls, waits %v: an upload must not be retried", calls.Load(), *waits)
	}
}

// Creations and updates carry an Idempotency-Key, the same on every try, so
// the gateway answers a retried one once.
func TestWritesRetriedWithOneIdempotencyKey(t *testing.T) {
	var mu sync.Mutex
	var keys []string
	var bodies []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		keys = append(keys, r.Header.Get("Idempotency-Key"))
		bodies = append(bodies, string(b))
		n := len(keys)
		mu.Unlock()
		if n%2 == 1 {
			w.Header().Set("Retry-After", "1")
			writeEnvelope(w, 429, "Rate limit exceeded", nil)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"data":{"id":"w1","name":"R","slug":"r","created_at":"2026-11-23T12:00:00Z"}}`)
	}))
	defer srv.Close()
	c, _ := newTestClient(t, srv)
	ctx := context.Background()
	if _, err := c.CreateWorkspace(ctx, WorkspaceCreate{Name: "R", Slug: "r"}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.UpdateWorkspace(ctx, "r", WorkspaceUpdate{Description: Null[string](), Name: Set("S")}); err != nil {
		t.Fatal(err)
	}
	if len(keys) != 4 || keys[0] == "" || keys[0] != keys[1] || keys[2] != keys[3] || keys[0] == keys[2] {
		t.Errorf("Idempotency-Keys %q, want one per call, repeated on its retry", keys)
	}
	if bodies[0] != bodies[1] || bodies[0] != `{"name":"R","slug":"r"}` {
		t.Errorf("creation bodies %q", bodies[:2])
	}
	if bodies[2] != `{"description":null,"name":"S"}` {
		t.Errorf("update body %q, want only the fields given, null clearing", bodies[2])
	}
}

func TestErrorCarriesEnvelope(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Request-Id", "req-1")
		if r.URL.Path == "/api/v1/workspaces/plain" {
			http.Error(w, "400 Bad Request", http.StatusBadRequest)
			return
		}
		writeEnvelope(w, 400, "Invalid request parameters", map[string]any{"files": 2, "keys": 1})
	}))
	defer srv.Close()
	c, _ := newTestClient(t, srv)
	err := c.DeleteWorkspace(context.Background(), "research")
	var apiErr *Error
	if !errors.As(err, &apiErr) {
		t.Fatalf("err = %v, want *Error", err)
	}
	if apiErr.StatusCode != 400 || apiErr.Message != "Invalid request parameters" || apiErr.RequestID != "req-1" ||
		apiErr.Metadata["files"] != float64(2) || apiErr.Metadata["keys"] != float64(1) {
		t.Errorf("error = %+v", apiErr)
	}
	_, err = c.GetWorkspace(context.Background(), "plain")
	if !errors.As(err, &apiErr) || apiErr.StatusCode != 400 || apiErr.Message != "Bad Request" || apiErr.Metadata != nil {
		t.Errorf("plain-text refusal: %+v", apiErr)
	}
}

func TestRequestIDAndKeyTravel(t *testing.T) {
	var got atomic.Value
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got.Store(r.Header.Clone())
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"data":[]}`)
	}))
	defer srv.Close()
	c, _ := newTestClient(t, srv)
	ctx := WithRequestID(context.Background(), "job-42")
	if _, err := c.ListModels(ctx); err != nil {
		t.Fatal(err)
	}
	h := got.Load().(http.Header)
	if h.Get("X-Request-Id") != "job-42" || h.Get("Authorization") != "Bearer sk-test" || h.Get("X-Api-Key") != "" {
		t.Errorf("headers %v", h)
	}
	c2, _ := newTestClient(t, srv, WithAPIKeyHeader())
	if _, err := c2.ListModels(context.Background()); err != nil {
		t.Fatal(err)
	}
	h = got.Load().(http.Header)
	if h.Get("X-Api-Key") != "sk-test" || h.Get("Authorization") != "" || h.Get("X-Request-Id") != "" {
		t.Errorf("headers %v", h)
	}
}

func TestNewRefusesShapeChangingUserAgent(t *testing.T) {
	if _, err := New("http://h", "k", WithUserAgent("OpenAI/Go 1.0")); err == nil {
		t.Error("an OpenAI/ User-Agent was accepted")
	}
	if _, err := New("ftp://h", "k"); err == nil {
		t.Error("a non-HTTP base URL was accepted")
	}
	c, err := New("http://h:8080/api/v1/", "k")
	if err != nil || c.base != "http://h:8080/api/v1" {
		t.Errorf("base %q, %v", c.base, err)
	}
}
