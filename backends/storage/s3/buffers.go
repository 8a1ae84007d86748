package s3

import (
	"context"
	"errors"
	"io"
	"sync"
	"sync/atomic"

	"golang.org/x/sync/semaphore"
)

// bufferPool hands out part buffers within a byte budget shared by all
// uploads, so the budget bounds what is in use however many uploads run.
//
// The buffers live outside the Go heap (anonymous mappings, where the
// platform has them; see mapBuffer). On the heap, a few part buffers in
// use are most of the live heap, and the collector lets the heap grow to
// twice its live size before it runs: every small allocation of the SDK
// and of the HTTP stack then piles up to as much again as the buffers
// themselves (bench/parts.sh, a 2 GiB file in 64 MiB parts, 4 at a time,
// so 8 buffers of 5 MiB in use: the gateway peaked 79-81 MiB above idle
// with buffers on the heap, 43-44 MiB with mapped ones). Mapped buffers
// are freed when put back to a full idle list, which is safe because no
// request can read a buffer once it is back: see partReader.
type bufferPool struct {
	size   int64
	budget *semaphore.Weighted
	// idle keeps a few part buffers for reuse, so that a steady stream of
	// uploads maps none, while bounding what stays resident when uploads
	// stop.
	idle   chan []byte
	mu     sync.Mutex // guards closed against puts racing close
	closed bool
	inUse  atomic.Int64
	peak   atomic.Int64
}

// maxIdleBuffers bounds the part buffers kept between uploads: enough for
// two uploads in flight, little enough to give memory back after a burst.
const maxIdleBuffers = 4

func newBufferPool(size, budget int64) *bufferPool {
	idle := min(budget/size, maxIdleBuffers)
	return &bufferPool{size: size, budget: semaphore.NewWeighted(budget), idle: make(chan []byte, idle)}
}

// get waits for room in the budget (or for ctx to end). The buffer must
// be given back with put, once no request may read it any more.
func (p *bufferPool) get(ctx context.Context) ([]byte, error) {
	if err := p.budget.Acquire(ctx, p.size); err != nil {
		return nil, err
	}
	return p.take()
}

// tryGet is get when the budget has room now; ok is false, with nothing
// taken, when it has not. A failure to map a buffer is err.
func (p *bufferPool) tryGet() (b []byte, ok bool, err error) {
	if !p.budget.TryAcquire(p.size) {
		return nil, false, nil
	}
	b, err = p.take()
	return b, err == nil, err
}

// take hands out a buffer for budget already acquired, giving it back if
// none can be made.
func (p *bufferPool) take() ([]byte, error) {
	n := p.inUse.Add(p.size)
	for {
		old := p.peak.Load()
		if n <= old || p.peak.CompareAndSwap(old, n) {
			break
		}
	}
	select {
	case b := <-p.idle:
		return b, nil
	default:
	}
	b, err := mapBuffer(int(p.size))
	if err != nil {
		p.inUse.Add(-p.size)
		p.budget.Release(p.size)
		return nil, err
	}
	return b, nil
}

// put takes back a buffer of get. Every partReader over it must have been
// fenced.
func (p *bufferPool) put(b []byte) {
	p.mu.Lock()
	kept := false
	if !p.closed {
		select {
		case p.idle <- b:
			kept = true
		default:
		}
	}
	p.mu.Unlock()
	if !kept {
		unmapBuffer(b)
	}
	p.inUse.Add(-p.size)
	p.budget.Release(p.size)
}

// close frees the idle buffers; buffers put back later are freed at once.
func (p *bufferPool) close() {
	p.mu.Lock()
	p.closed = true
	p.mu.Unlock()
	for {
		select {
		case b := <-p.idle:
			unmapBuffer(b)
		default:
			return
		}
	}
}

// errFenced is what a partReader answers once its request is over.
var errFenced = errors.New("s3: part body read after its request ended")

// partReader is the body of a request sending (part of) a pooled buffer.
// The buffer goes back to the pool when the SDK call returns, to be
// refilled for another part or unmapped; but net/http may still hold the
// request's body then, in the goroutine writing it (a server that answered
// before reading the whole body, an attempt that failed while writing).
// Every read of the buffer goes through a partReader, and fence ends them:
// it waits for a read in progress and makes every later one fail, so once
// it returns nothing can touch the buffer through this reader. The SDK's
// own wrapper of request bodies does the same today; the pool's safety
// does not rest on it.
//
// It is seekable, so the SDK can hash it for the signature and the
// checksum and rewind it for a retry, which sends the same bytes again.
type partReader struct {
	mu     sync.Mutex
	buf    []byte
	off    int
	fenced bool
}

func newPartReader(buf []byte) *partReader { return &partReader{buf: buf} }

func (r *partReader) Read(p []byte) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.fenced {
		return 0, errFenced
	}
	if r.off >= len(r.buf) {
		return 0, io.EOF
	}
	n := copy(p, r.buf[r.off:])
	r.off += n
	return n, nil
}

func (r *partReader) Seek(offset int64, whence int) (int64, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.fenced {
		return 0, errFenced
	}
	var abs int64
	switch whence {
	case io.SeekStart:
		abs = offset
	case io.SeekCurrent:
		abs = int64(r.off) + offset
	case io.SeekEnd:
		abs = int64(len(r.buf)) + offset
	default:
		return 0, errors.New("s3: part body: invalid whence")
	}
	if abs < 0 || abs > int64(len(r.buf)) {
		return 0, errors.New("s3: part body: seek out of range")
	}
	r.off = int(abs)
	return abs, nil
}

// fence ends every read of the buffer; see partReader.
func (r *partReader) fence() {
	r.mu.Lock()
	r.fenced = true
	r.buf = nil
	r.mu.Unlock()
}
