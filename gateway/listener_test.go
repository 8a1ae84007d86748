package gateway

import (
	"bufio"
	"encoding/json"
	"net"
	"net/http"
	"net/netip"
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
