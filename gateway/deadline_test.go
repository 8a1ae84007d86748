package gateway

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"
)

// rawRequest writes raw to a new connection to srv and returns everything
// the server sends until it closes the connection, failing when that takes
// longer than within.
func rawRequest(t *testing.T, srv *httptest.Server, raw string, within time.Duration) string {
	t.Helper()
	conn, err := net.Dial("tcp", srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := io.WriteString(conn, raw); err != nil {
		t.Fatal(err)
	}
	_ = conn.SetReadDeadline(time.Now().Add(within))
	got, err := io.ReadAll(conn)
	if err != nil {
		t.Fatalf("connection still open after %s (read: %v); got so far %q", within, err, got)
	}
	return string(got)
}

// TestStalledBodyIsClosed: a request that declares a body and sends none
// (or part of it) is closed by the body deadline on any route, keyed or
// not; before, it was held open forever.
func TestStalledBodyIsClosed(t *testing.T) {
	t.Parallel() // real sockets and real deadlines: waits that can overlap
	api := mustNew(t, Options{Log: zap.NewNop(), BodyReadTimeout: 200 * time.Millisecond})
	srv := httptest.NewServer(api.Handler())
	t.Cleanup(srv.Close) // after the parallel subtests, which a defer would not wait for
	for name, raw := range map[string]string{
		"nothing sent to a route that ignores it": "POST /healthz HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\n",
		"stalled after 10 of 100 bytes":           "POST /healthz HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n0123456789",
		"chunked, no chunk ever":                  "POST /healthz HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n",
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel() // a connection of its own
			start := time.Now()
			rawRequest(t, srv, raw, 5*time.Second)
			if d := time.Since(start); d < 150*time.Millisecond {
				t.Errorf("closed after %s, before the body deadline", d)
			}
		})
	}
}

// TestBodyDeadlineEndsWithTheBody: a handler that has read its whole body
// may work past the body deadline without its request being cancelled.
func TestBodyDeadlineEndsWithTheBody(t *testing.T) {
	t.Parallel() // real sockets and real deadlines: waits that can overlap
	api := mustNew(t, Options{Log: zap.NewNop(), BodyReadTimeout: 100 * time.Millisecond})
	h := guardBody(api.bodyTimeout, api.lingering)(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, err := io.ReadAll(r.Body); err != nil {
			t.Errorf("read body: %v", err)
		}
		select {
		case <-r.Context().Done():
			t.Error("request cancelled after its body was read")
		case <-time.After(400 * time.Millisecond): // longer than the body deadline
		}
		w.WriteHeader(http.StatusNoContent)
	}))
	srv := httptest.NewServer(h)
	defer srv.Close()
	resp, err := http.Post(srv.URL, "application/json", strings.NewReader(`{"a":1}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNoContent {
		t.Errorf("status = %d, want 204", resp.StatusCode)
	}
}

// TestChunkedRequestClosesConnection: a request framed both by
// Content-Length and chunked encoding cannot smuggle a second request: the
// connection closes after the first answer.
func TestChunkedRequestClosesConnection(t *testing.T) {
	api := mustNew(t, Options{Log: zap.NewNop(), BodyReadTimeout: time.Second})
	srv := httptest.NewServer(api.Handler())
	defer srv.Close()
	smuggled := "GET /healthz?smuggled HTTP/1.1\r\nHost: x\r\n\r\n"
	raw := "POST /healthz HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n" + smuggled
	got := rawRequest(t, srv, raw, 5*time.Second)
	resp, err := http.ReadResponse(bufio.NewReader(strings.NewReader(got)), nil)
	if err != nil {
		t.Fatalf("no first answer: %v (%q)", err, got)
	}
	if !resp.Close {
		t.Error("the first answer does not close the connection")
	}
	if n := strings.Count(got, "HTTP/1.1 "); n != 1 {
		t.Errorf("%d answers on the connection, want 1 (the smuggled request was served):\n%s", n, got)
	}
}

// A handler mounted beside the API through Guard (the console) has the
// API's body deadline: a form that never arrives is cut, not held open,
// and the exchange is logged under the mount's name.
func TestGuardedHandlerHasTheBodyDeadline(t *testing.T) {
	t.Parallel() // real sockets and real deadlines: waits that can overlap
	api, logs := newTestAPI(t, Options{BodyReadTimeout: 200 * time.Millisecond})
	form := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := r.ParseForm(); err != nil {
			http.Error(w, "form did not arrive", http.StatusRequestTimeout)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	})
	srv := httptest.NewServer(api.Guard("/console/", form))
	defer srv.Close()
	start := time.Now()
	got := rawRequest(t, srv, "POST /console/sign-in HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: 1000\r\n\r\nkey=", 5*time.Second)
	if d := time.Since(start); d < 150*time.Millisecond {
		t.Errorf("closed after %s, before the body deadline", d)
	}
	if !strings.HasPrefix(got, "HTTP/1.1 408") {
		t.Errorf("answer %q, want 408", got)
	}
	if n := logs.FilterMessage("request").FilterField(zap.String("route", "/console/")).Len(); n != 1 {
		t.Errorf("%d access log lines under the mount's route, want 1", n)
	}
}
