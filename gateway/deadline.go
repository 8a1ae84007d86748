package gateway

import (
	"errors"
	"io"
	"net/http"
	"sync"
	"time"
)

// guardBody protects the connection of every request that carries a body.
//
// A chunked request is answered with Connection: close. net/http accepts a
// request with both Content-Length and Transfer-Encoding: chunked as chunked
// and drops Content-Length before a handler can see it; behind a proxy that
// frames by Content-Length, bytes after the chunked terminator could be
// served as a second, smuggled request. RFC 9112 §6.1 allows processing such
// a message only if the connection is closed after it, and since the two
// cases cannot be told apart here, every chunked request closes its
// connection (uploads mostly; one new connection per upload costs little).
//
// It also gives every request that carries a body a read deadline, on
// every route and before authentication: without one, a client that
// declares a body and never sends it holds its connection (and a file
// descriptor) forever, since ReadHeaderTimeout ends with the headers. The
// deadline is cleared once the body has been read to its end, so a handler
// that works longer than it after reading (a slow store) is not cancelled
// by it. Upload handlers move it forward as bytes arrive (bodyClock.extend).
//
// An error answered while the body is still coming is followed by a
// lingering close (prepareLinger), once the handler has returned.
func guardBody(timeout time.Duration, lingering Lingering) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Body == nil || r.Body == http.NoBody {
				next.ServeHTTP(w, r)
				return
			}
			if len(r.TransferEncoding) > 0 {
				w.Header().Set("Connection", "close")
			}
			clock := &bodyClock{rc: http.NewResponseController(w), declared: r.ContentLength, idle: timeout, bounds: lingering}
			clock.set(time.Now().Add(timeout))
			clock.body = &clockedBody{ReadCloser: r.Body, clock: clock}
			r.Body = clock.body
			// The clock travels with the key, in the request's state
			// (bodyClockOf); outside observe the deadline still holds.
			if st := stateOf(r.Context()); st != nil {
				st.body = clock
			}
			next.ServeHTTP(w, r)
			clock.linger()
		})
	}
}

// bodyClock is the read deadline of one request's body, and what is known
// of the body: how much was declared and read, whether it ended, whether
// the answer chose to linger (see prepareLinger). A nil *bodyClock (a
// request without a body) does nothing.
type bodyClock struct {
	rc       *http.ResponseController
	body     *clockedBody
	declared int64         // Content-Length, or -1 when chunked
	idle     time.Duration // the body read timeout, bounding each read of a drain
	bounds   Lingering
	mu       sync.Mutex
	read     int64
	done     bool
	extended time.Time
	// lingering: the answer was written with Connection: close while the
	// body was still coming; the rest is drained after the handler.
	lingering bool
}

func (c *bodyClock) set(deadline time.Time) {
	// An error means the writer cannot take deadlines (a test recorder);
	// there is no connection to protect then.
	_ = c.rc.SetReadDeadline(deadline)
}

// extend moves the deadline to idle from now, at most once a second (or
// twice per idle period, if that is shorter), so it measures idleness rather
// than the length of the transfer without a system call per read. After
// the body has ended it does nothing.
func (c *bodyClock) extend(idle time.Duration) {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	now := time.Now()
	if c.done || now.Sub(c.extended) < min(time.Second, idle/2) {
		return
	}
	c.extended = now
	c.set(now.Add(idle))
}

// stop clears the deadline for good: the body has been read.
func (c *bodyClock) stop() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.done {
		c.done = true
		c.set(time.Time{})
	}
}

// clockedBody stops the clock when the body reaches its end.
type clockedBody struct {
	io.ReadCloser
	clock *bodyClock
}

func (b *clockedBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	b.clock.mu.Lock()
	b.clock.read += int64(n)
	b.clock.mu.Unlock()
	if errors.Is(err, io.EOF) {
		b.clock.stop()
	}
	return n, err
}
