package lowprio

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// niceOf reads a thread's niceness from /proc (field 19 of its stat, the
// fields counted after the command name, which may hold spaces).
func niceOf(t *testing.T, tid string) int {
	t.Helper()
	b, err := os.ReadFile("/proc/self/task/" + tid + "/stat")
	if err != nil {
		t.Fatal(err)
	}
	fields := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
	n, err := strconv.Atoi(fields[16])
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func TestDoRunsOnALoweredThread(t *testing.T) {
	p := New(1)
	defer p.Close()
	if err := p.Err(); err != nil {
		t.Fatalf("Err = %v", err)
	}
	caller := strconv.Itoa(unix.Gettid())
	var worker string
	if err := p.Do(context.Background(), func() { worker = strconv.Itoa(unix.Gettid()) }); err != nil {
		t.Fatal(err)
	}
	if worker == caller {
		t.Fatalf("ran on the caller's thread %s", caller)
	}
	if got := niceOf(t, worker); got != Nice {
		t.Errorf("worker thread nice = %d, want %d", got, Nice)
	}
	if got := niceOf(t, caller); got != 0 {
		t.Errorf("caller thread nice = %d, want 0", got)
	}
}

func TestCloseEndsTheLoweredThreads(t *testing.T) {
	// Many pools, so that some worker starts out on the main thread, as
	// one in a few dozen does: that thread is never ended, and must not be
	// the one lowered.
	for range 30 {
		closeEndsTheLoweredThreads(t)
	}
}

func closeEndsTheLoweredThreads(t *testing.T) {
	const workers = 3
	p := New(workers)
	// One function per thread, each waiting for all to have started, so
	// that every thread reports its id.
	var arrived sync.WaitGroup
	arrived.Add(workers)
	tids := make(chan string, workers)
	for range workers {
		go func() {
			_ = p.Do(context.Background(), func() {
				tids <- strconv.Itoa(unix.Gettid())
				arrived.Done()
				arrived.Wait()
			})
		}()
	}
	seen := map[string]bool{}
	for range workers {
		tid := <-tids
		seen[tid] = true
		if got := niceOf(t, tid); got != Nice {
			t.Errorf("thread %s nice = %d, want %d", tid, got, Nice)
		}
	}
	if len(seen) != workers {
		t.Fatalf("ran on threads %v, want %d different ones", seen, workers)
	}
	if main := strconv.Itoa(os.Getpid()); seen[main] {
		t.Fatalf("a worker runs on the main thread %s", main)
	}
	p.Close()
	// The workers returned while locked, so the runtime ends their threads
	// (just after) instead of reusing them for other goroutines: a reused
	// thread would live on, lowered.
	deadline := time.Now().Add(10 * time.Second)
	for tid := range seen {
		for {
			if _, err := os.Stat("/proc/self/task/" + tid); errors.Is(err, fs.ErrNotExist) {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("thread %s still runs after Close (nice %d)", tid, niceOf(t, tid))
			}
			runtime.Gosched()
		}
	}
}
