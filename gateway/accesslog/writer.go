package accesslog

import (
	"bytes"
	"io"
	"sync"
	"sync/atomic"
	"time"
)

// Writer buffers whole lines in memory and writes them to its output from
// one goroutine: every FlushInterval, as soon as the buffer is half full,
// and on Close. A request only appends its line under a mutex; it never
// waits for the output. When the output is slower than the lines come (a
// stalled log collector, a full pipe) and the buffer fills while the
// previous one is still being written, new lines are dropped and counted
// (Dropped) instead: the gateway keeps answering, and the counter says how
// much of the log is missing.
//
// Lines are written whole and in order. A Writer is safe for concurrent use.
type Writer struct {
	out      io.Writer
	interval time.Duration

	mu      sync.Mutex
	buf     []byte // being filled
	spare   []byte // the other buffer; nil while the flusher writes it
	closed  bool
	dropped atomic.Uint64

	kick     chan struct{} // wakes the flusher early (half full)
	stop     chan struct{}
	stopOnce sync.Once
	done     chan struct{}
}

// Options tune a Writer; zero values take the defaults.
type Options struct {
	// BufferSize is the size of each of the two buffers (default 256 KiB).
	BufferSize int
	// FlushInterval bounds how long a line waits in the buffer (default
	// 100ms).
	FlushInterval time.Duration
}

// NewWriter starts a Writer on out. Close it to write what is buffered.
func NewWriter(out io.Writer, o Options) *Writer {
	if o.BufferSize <= 0 {
		o.BufferSize = 256 << 10
	}
	if o.FlushInterval <= 0 {
		o.FlushInterval = 100 * time.Millisecond
	}
	w := &Writer{
		out:      out,
		interval: o.FlushInterval,
		buf:      make([]byte, 0, o.BufferSize),
		spare:    make([]byte, 0, o.BufferSize),
		kick:     make(chan struct{}, 1),
		stop:     make(chan struct{}),
		done:     make(chan struct{}),
	}
	go w.run()
	return w
}

// Log appends the entry's line.
func (w *Writer) Log(e *Entry) {
	// Encoded outside the lock, into a buffer on the stack for any line of
	// ordinary length.
	var scratch [512]byte
	w.Write(e.AppendJSON(scratch[:0]))
}

// Write appends one or more whole lines (each ending in a newline), or
// drops them all when the buffer cannot take them now. It never blocks on
// the output, and always reports success: a dropped line is counted, not
// returned as an error the request could do nothing about.
func (w *Writer) Write(line []byte) (int, error) {
	w.mu.Lock()
	if w.closed {
		// Stragglers after Close (a request cancelled at the end of the
		// grace period) are written through, so none is lost. A copy: the
		// line handed to an io.Writer would escape, and Log's line is on
		// its stack.
		w.writeOut(append([]byte(nil), line...))
		w.mu.Unlock()
		return len(line), nil
	}
	if len(w.buf)+len(line) > cap(w.buf) {
		w.mu.Unlock()
		w.dropped.Add(uint64(bytes.Count(line, []byte{'\n'})))
		w.wake()
		return len(line), nil
	}
	w.buf = append(w.buf, line...)
	half := len(w.buf) >= cap(w.buf)/2
	w.mu.Unlock()
	if half {
		w.wake()
	}
	return len(line), nil
}

// Dropped is the number of lines dropped so far: because the output was
// behind, or failed.
func (w *Writer) Dropped() uint64 { return w.dropped.Load() }

// Close writes what is buffered and stops the flusher; lines logged after
// it are written straight through. It is safe to call more than once.
func (w *Writer) Close() error {
	w.stopOnce.Do(func() { close(w.stop) })
	<-w.done
	// The flusher is gone: what it did not take is written here, under the
	// lock, so that stragglers queue behind it and the output has one
	// writer at a time.
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.closed {
		w.closed = true
		w.writeOut(w.buf)
		w.buf = w.buf[:0]
	}
	return nil
}

func (w *Writer) wake() {
	select {
	case w.kick <- struct{}{}:
	default:
	}
}

// run is the flusher: it swaps the filled buffer for the spare one and
// writes it outside the lock, so requests keep appending meanwhile.
func (w *Writer) run() {
	defer close(w.done)
	t := time.NewTicker(w.interval)
	defer t.Stop()
	for {
		select {
		case <-w.stop:
			return
		case <-t.C:
		case <-w.kick:
		}
		w.mu.Lock()
		full := w.buf
		if len(full) == 0 {
			w.mu.Unlock()
			continue
		}
		w.buf, w.spare = w.spare, nil
		w.mu.Unlock()

		w.writeOut(full)

		w.mu.Lock()
		w.spare = full[:0]
		w.mu.Unlock()
	}
}

// writeOut writes b, counting its lines as dropped if the output fails.
func (w *Writer) writeOut(b []byte) {
	if len(b) == 0 {
		return
	}
	if _, err := w.out.Write(b); err != nil {
		w.dropped.Add(uint64(bytes.Count(b, []byte{'\n'})))
	}
}
