package accesslog

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"
)

// lockedBuffer is an output that is safe to read while the flusher writes,
// and reports each write.
type lockedBuffer struct {
	mu     sync.Mutex
	b      bytes.Buffer
	writes chan int
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	n, err := l.b.Write(p)
	l.mu.Unlock()
	if l.writes != nil {
		l.writes <- n
	}
	return n, err
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func line(i int) []byte { return []byte(fmt.Sprintf("{\"n\":%d}\n", i)) }

func TestCloseWritesEveryLineInOrder(t *testing.T) {
	out := &lockedBuffer{}
	w := NewWriter(out, Options{BufferSize: 1 << 10, FlushInterval: time.Hour})
	var want strings.Builder
	for i := range 50 { // less than a buffer: all of it waits for Close
		_, _ = w.Write(line(i))
		want.Write(line(i))
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if w.Dropped() != 0 || out.String() != want.String() {
		t.Errorf("%d dropped; output differs from the lines written:\n%q", w.Dropped(), out.String())
	}
	// After Close, lines go straight through.
	_, _ = w.Write(line(-1))
	if !strings.HasSuffix(out.String(), string(line(-1))) {
		t.Error("a line written after Close was lost")
	}
	if err := w.Close(); err != nil {
		t.Error(err)
	}
}

func TestFlushesOnTheInterval(t *testing.T) {
	out := &lockedBuffer{writes: make(chan int, 1)}
	w := NewWriter(out, Options{FlushInterval: 5 * time.Millisecond})
	defer w.Close()
	_, _ = w.Write(line(1))
	select {
	case <-out.writes:
	case <-time.After(5 * time.Second):
		t.Fatal("a buffered line was not written without Close")
	}
	if out.String() != string(line(1)) {
		t.Errorf("output %q", out.String())
	}
}

// stalledOutput blocks every write until released, like a log pipe nobody
// reads.
type stalledOutput struct {
	entered chan struct{}
	release chan struct{}
	lockedBuffer
}

func (s *stalledOutput) Write(p []byte) (int, error) {
	select {
	case s.entered <- struct{}{}:
	default:
	}
	<-s.release
	return s.lockedBuffer.Write(p)
}

func TestDropsAndCountsInsteadOfBlocking(t *testing.T) {
	out := &stalledOutput{entered: make(chan struct{}, 1), release: make(chan struct{})}
	w := NewWriter(out, Options{BufferSize: 100, FlushInterval: time.Hour})
	l := line(0) // 8 bytes
	// Half a buffer wakes the flusher, which then hangs in the output.
	for range 7 {
		_, _ = w.Write(l)
	}
	<-out.entered
	// The second buffer fills, then lines are dropped; none of these
	// writes may block (the test would hang).
	const more = 100
	for range more {
		_, _ = w.Write(l)
	}
	kept := 100 / len(l)
	if got, want := w.Dropped(), uint64(more-kept); got != want {
		t.Errorf("dropped %d lines, want %d", got, want)
	}
	close(out.release)
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if got, want := strings.Count(out.String(), "\n"), 7+kept; got != want {
		t.Errorf("wrote %d lines, want %d", got, want)
	}
}

type failingOutput struct{}

func (failingOutput) Write([]byte) (int, error) { return 0, errors.New("broken pipe") }

func TestFailedWritesCountAsDropped(t *testing.T) {
	w := NewWriter(failingOutput{}, Options{FlushInterval: time.Hour})
	_, _ = w.Write(line(1))
	_, _ = w.Write(line(2))
	_ = w.Close()
	if w.Dropped() != 2 {
		t.Errorf("dropped = %d, want 2", w.Dropped())
	}
}

func TestConcurrentLinesStayWhole(t *testing.T) {
	out := &lockedBuffer{}
	w := NewWriter(out, Options{BufferSize: 4 << 10, FlushInterval: time.Millisecond})
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 500 {
				e := Entry{Time: time.Now(), Method: "GET", Route: "/r", Status: g, Bytes: int64(i)}
				w.Log(&e)
			}
		}()
	}
	wg.Wait()
	_ = w.Close()
	lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	if uint64(len(lines))+w.Dropped() != 8*500 {
		t.Errorf("%d lines written and %d dropped, want 4000 in all", len(lines), w.Dropped())
	}
	for _, l := range lines {
		if !strings.HasPrefix(l, `{"level":"info"`) || !strings.HasSuffix(l, `"}`) {
			t.Fatalf("a torn line: %q", l)
		}
	}
}
