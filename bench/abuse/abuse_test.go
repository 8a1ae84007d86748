package main

import (
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync/atomic"
	"testing"
	"time"
)

func TestStatusOf(t *testing.T) {
	tests := []struct {
		head string
		want int
	}{
		{"HTTP/1.1 503 Service Unavailable\r\n", 503},
		{"HTTP/1.0 408 Request Timeout", 408},
		{"HTTP/1.1 200", 200},
		{"HTTP/1.1 20", 0},
		{"HTTP/2 200 OK", 0},
		{"garbage", 0},
		{"", 0},
	}
	for _, tt := range tests {
		t.Run(strconv.Quote(tt.head), func(t *testing.T) {
			if got := statusOf([]byte(tt.head)); got != tt.want {
				t.Errorf("statusOf(%q) = %d, want %d", tt.head, got, tt.want)
			}
		})
	}
}

func TestParseFlagsRefusesNonLoopback(t *testing.T) {
	tests := []struct {
		name string
		args []string
		ok   bool
	}{
		{"loopback", []string{"-addr", "127.0.0.1:8080"}, true},
		{"ipv6 loopback", []string{"-addr", "[::1]:8080"}, true},
		{"other address", []string{"-addr", "10.0.0.1:8080"}, false},
		{"host name", []string{"-addr", "localhost:8080"}, false},
		{"no port", []string{"-addr", "127.0.0.1"}, false},
		{"attack source elsewhere", []string{"-attack-from", "192.168.1.2"}, false},
		{"attack sources", []string{"-attack-from", "127.0.0.2, 127.0.0.3"}, true},
		{"trickle above stall", []string{"-stall", "10", "-trickle", "11"}, false},
		{"unbounded duration", []string{"-duration", "2h"}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			args := append([]string{"-key", "k", "-mgmt", "m"}, tt.args...)
			_, err := parseFlags(args)
			if (err == nil) != tt.ok {
				t.Errorf("parseFlags(%q) error = %v, want ok %v", tt.args, err, tt.ok)
			}
		})
	}
}

// TestWatch checks how an attack connection's end is classified: an answer
// then FIN from the gateway, or still open when the tool closes it.
func TestWatch(t *testing.T) {
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
			// The first connection is refused, the second left open.
			_, _ = io.WriteString(c, "HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\n\r\n")
			_ = c.Close()
			c2, err := ln.Accept()
			if err != nil {
				return
			}
			defer c2.Close()
		}
	}()

	start := time.Now()
	var closed atomic.Int64
	refused := dialWatched(t, ln.Addr().String(), start, &closed)
	<-refused.ended
	if refused.status != 503 || refused.how != endEOF {
		t.Errorf("refused connection: status %d, end %d; want 503, endEOF", refused.status, refused.how)
	}
	held := dialWatched(t, ln.Addr().String(), start, &closed)
	_ = held.nc.Close()
	<-held.ended
	if held.status != 0 || held.how != endOpen {
		t.Errorf("held connection: status %d, end %d; want 0, endOpen", held.status, held.how)
	}
	if got := closed.Load(); got != 1 {
		t.Errorf("closed by the gateway = %d, want 1", got)
	}
}

func dialWatched(t *testing.T, addr string, start time.Time, closed *atomic.Int64) *attackConn {
	t.Helper()
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	c := &attackConn{nc: nc, ended: make(chan struct{})}
	go c.watch(start, closed)
	return c
}

// TestExchangeHalfClose checks that a half-closed request still arrives whole
// and its answer is read.
func TestExchangeHalfClose(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		w.WriteHeader(http.StatusCreated)
		_, _ = io.WriteString(w, `{"id":"file-`+strconv.Itoa(len(b))+`"}`)
	}))
	defer srv.Close()
	addr := srv.Listener.Addr().String()

	for _, half := range []bool{false, true} {
		t.Run("half close "+strconv.FormatBool(half), func(t *testing.T) {
			req := uploadRequest(addr, "k", "a.txt")
			a := exchange(addr, req, half, 5*time.Second)
			if a.err != nil || a.status != http.StatusCreated {
				t.Fatalf("exchange: status %d, err %v", a.status, a.err)
			}
			if id := fileID(a.body); id == "" || id == "file-0" {
				t.Errorf("file id %q: the body did not arrive", id)
			}
		})
	}
}

func TestTally(t *testing.T) {
	tl := newTally()
	for _, a := range []answer{
		{status: 200},
		{status: 201, body: []byte(`{}`)},
		{status: 400, body: []byte(`{}`)},
		{},
	} {
		tl.add(a)
	}
	if tl.success != 2 || tl.emptySuccess != 1 || tl.noAnswer != 1 || tl.statuses[400] != 1 {
		t.Errorf("tally = %+v", tl)
	}
	if got, want := tl.answers(), "{200: 1, 201: 1, 400: 1, no answer: 1}"; got != want {
		t.Errorf("answers() = %q, want %q", got, want)
	}
}
