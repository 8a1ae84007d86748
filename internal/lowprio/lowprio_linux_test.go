package lowprio

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"os"
	"os/exec"
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

// lowered is the niceness a Pool's thread should have: Nice more than the
// process's (its main thread's), at most 19.
func lowered(t *testing.T) int {
	return min(niceOf(t, strconv.Itoa(os.Getpid()))+Nice, 19)
}

func TestDoRunsOnALoweredThread(t *testing.T) {
	p := New(1)
	defer p.Close()
	if err := p.Err(); err != nil {
		t.Fatalf("Err = %v", err)
	}
	caller := strconv.Itoa(unix.Gettid())
	callerNice := niceOf(t, caller)
	var worker string
	if err := p.Do(context.Background(), func() { worker = strconv.Itoa(unix.Gettid()) }); err != nil {
		t.Fatal(err)
	}
	if worker == caller {
		t.Fatalf("ran on the caller's thread %s", caller)
	}
	if got, want := niceOf(t, worker), lowered(t); got != want {
		t.Errorf("worker thread nice = %d, want %d", got, want)
	}
	if got := niceOf(t, caller); got != callerNice {
		t.Errorf("caller thread nice = %d, was %d", got, callerNice)
	}
}

// TestThreadsAreLoweredFromTheProcesssNiceness: in a process started 5
// nicer, the threads run Nice nicer than that, below its requests still
// (the test runs itself again under nice).
func TestThreadsAreLoweredFromTheProcesssNiceness(t *testing.T) {
	if want := os.Getenv("LOWPRIO_CHILD_NICE"); want != "" {
		if got := strconv.Itoa(niceOf(t, strconv.Itoa(os.Getpid()))); got != want {
			t.Fatalf("the child runs at nice %s, want %s", got, want)
		}
		TestDoRunsOnALoweredThread(t)
		return
	}
	parent := niceOf(t, strconv.Itoa(os.Getpid()))
	cmd := exec.Command("nice", "-n", "5", os.Args[0], "-test.run=^TestThreadsAreLoweredFromTheProcesssNiceness$", "-test.v")
	cmd.Env = append(os.Environ(), "LOWPRIO_CHILD_NICE="+strconv.Itoa(min(parent+5, 19)))
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "--- PASS") {
		t.Fatalf("under nice 5: %v\n%s", err, out)
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
		if got, want := niceOf(t, tid), lowered(t); got != want {
			t.Errorf("thread %s nice = %d, want %d", tid, got, want)
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
