package gateway

import (
	"io"
	"net/http"
	"time"
)

// Lingering bounds the draining of a refused request's body (see
// prepareLinger): at most MaxBytes more bytes, for at most Timeout.
type Lingering struct {
	MaxBytes int64
	Timeout  time.Duration
}

// DefaultLingering drains up to 128 MiB for up to 30 s: enough for a client
// to finish sending an upload a little over the default 100 MiB limit on a
// reasonable link and then read its 413.
var DefaultLingering = Lingering{MaxBytes: 128 << 20, Timeout: 30 * time.Second}

// keepAliveDrain is how much unread body net/http itself reads and
// discards before it answers (its maxPostHandlerReadBytes), keeping the
// connection: below it there is nothing to do here.
const keepAliveDrain = 256 << 10

// prepareLinger is called before an error answer is written. When the
// request's body is still coming, the answer must still reach clients that
// send their whole body before they read anything (Node's fetch, and with
// it the OpenAI and Anthropic SDKs): net/http would answer and close with
// the body unread, the client's next write fails (EPIPE, or a reset that
// also discards the answer it had received), and the SDK reports a
// connection error and sends the whole body again.
//
// So, as nginx's lingering close does, the answer goes out with
// Connection: close and then the rest of the body is read and discarded,
// within the clock's Lingering bounds, before the connection closes (linger,
// after the handler). Full duplex lets net/http write the answer while the
// body is unread. A body whose declared rest is small is left to net/http,
// which reads it and keeps the connection; one whose declared rest exceeds
// the bounds is not drained at all (it could not finish anyway), only
// closed.
func (c *bodyClock) prepareLinger(h http.Header) {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.done || c.lingering {
		return
	}
	if c.declared >= 0 {
		rest := c.declared - c.read
		if rest < keepAliveDrain || rest > c.bounds.MaxBytes {
			return
		}
	}
	if c.bounds.MaxBytes <= 0 || c.bounds.Timeout <= 0 || c.rc.EnableFullDuplex() != nil {
		return // off, or not a connection of net/http's (a test recorder)
	}
	h.Set("Connection", "close")
	c.lingering = true
}

// linger drains the rest of the body when prepareLinger chose to. The
// answer is flushed first, so a client that reads while it sends sees it
// at once. Draining stops at the byte bound, at the time bound, or when the
// client sends nothing for the body's idle timeout (a stalled client is not
// waited on longer than any other body); what is left then is dropped with
// the connection.
func (c *bodyClock) linger() {
	c.mu.Lock()
	if !c.lingering || c.done {
		c.mu.Unlock()
		return
	}
	c.done = true // the deadline is the drain's now: extend and stop leave it
	c.mu.Unlock()
	_ = c.rc.Flush()
	d := &drain{c: c, end: time.Now().Add(c.bounds.Timeout)}
	_, _ = io.CopyN(io.Discard, d, c.bounds.MaxBytes)
}

// drain reads the raw body, each read due within the idle timeout and all
// of them before end.
type drain struct {
	c   *bodyClock
	end time.Time
}

func (d *drain) Read(p []byte) (int, error) {
	deadline := time.Now().Add(d.c.idle)
	if deadline.After(d.end) {
		deadline = d.end
	}
	d.c.set(deadline)
	return d.c.body.ReadCloser.Read(p)
}
