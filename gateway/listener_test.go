package gateway

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"
)

// acceptAll serves ln by holding every accepted connection open until the
// test ends; it reports each accepted connection on the channel.
func acceptAll(t *testing.T, ln net.Listener) <-chan net.Conn {
	t.Helper()
	accepted := make(chan net.Conn, 16)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			accepted <- c
		}
	}()
	return accepted
}

func dial(t *testing.T, addr string) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// wantRefused reads the refusal from c: a 503 in the error envelope with
// Retry-After, then the end of the connection.
func wantRefused(t *testing.T, c net.Conn) {
	t.Helper()
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("no refusal read: %v", err)
	}
	defer resp.Body.Close()
	var env struct {
		Error struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&env); err != nil {
		t.Fatalf("refusal body: %v", err)
	}
	if resp.StatusCode != 503 || env.Error.Code != 503 || resp.Header.Get("Retry-After") == "" || !resp.Close {
		t.Errorf("refusal = %d %+v Retry-After %q close %v", resp.StatusCode, env, resp.Header.Get("Retry-After"), resp.Close)
	}
}

func wantAccepted(t *testing.T, accepted <-chan net.Conn) net.Conn {
	t.Helper()
	select {
	case c := <-accepted:
		return c
	case <-time.After(5 * time.Second):
		t.Fatal("connection not accepted")
		return nil
	}
}

func TestLimitListenerPerClient(t *testing.T) {
	raw, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var reasons []string
	ln := LimitListener(raw, ConnLimits{Max: 10, PerClient: 2, OnRefuse: func(r string) {
		mu.Lock()
		reasons = append(reasons, r)
		mu.Unlock()
	}})
	defer ln.Close()
	accepted := acceptAll(t, ln)
	addr := raw.Addr().String()

	dial(t, addr)
	dial(t, addr)
	first := wantAccepted(t, accepted)
	wantAccepted(t, accepted)
	wantRefused(t, dial(t, addr)) // a third from the same address
	mu.Lock()
	if len(reasons) != 1 || reasons[0] != "per_client" {
		t.Errorf("refusals = %v, want [per_client]", reasons)
	}
	mu.Unlock()

	// Closing one frees its place, once, however often it is closed.
	first.Close()
	first.Close()
	dial(t, addr)
	wantAccepted(t, accepted)
	wantRefused(t, dial(t, addr))
}

func TestLimitListenerTotal(t *testing.T) {
	raw, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	// Loopback is exempt from the per-client cap (as a trusted proxy
	// would be), so only the total applies.
	ln := LimitListener(raw, ConnLimits{Max: 3, PerClient: 1, Exempt: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}})
	defer ln.Close()
	accepted := acceptAll(t, ln)
	addr := raw.Addr().String()
	for range 3 {
		dial(t, addr)
		wantAccepted(t, accepted)
	}
	wantRefused(t, dial(t, addr))
}

func TestLimitListenerOff(t *testing.T) {
	raw, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	if ln := LimitListener(raw, ConnLimits{}); ln != raw {
		t.Error("no limits should leave the listener as it is")
	}
}

// TestLimitedConnHalfClosesAfterAnUnreadBody: a request refused without
// reading its body ends, behind the connection limits as without them, with
// the answer and then an end of stream (net/http's half-close), not with a
// reset that a client still sending would get in place of the answer.
func TestLimitedConnHalfClosesAfterAnUnreadBody(t *testing.T) {
	raw, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ln := LimitListener(raw, ConnLimits{Max: 8})
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusRequestEntityTooLarge)
	})}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })

	c := dial(t, raw.Addr().String())
	// A declared body far larger than net/http drains after a handler
	// (256 KiB), and a first piece of it: the rest is never sent.
	_, err = fmt.Fprintf(c, "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n%s", 64<<20, strings.Repeat("x", 64<<10))
	if err != nil {
		t.Fatal(err)
	}
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatalf("no answer read: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusRequestEntityTooLarge {
		t.Fatalf("status = %d, want 413", resp.StatusCode)
	}
	// Half-closed: the next read is a clean end of stream. Without the
	// half-close the server closes with unread bytes after a pause and the
	// read fails with a reset instead.
	if n, err := br.Read(make([]byte, 1)); n != 0 || err != io.EOF {
		t.Errorf("after the answer: read %d bytes, %v; want a clean end of stream (io.EOF)", n, err)
	}
}
