// Package lowprio runs throughput work on OS threads that the kernel
// schedules after the process's other threads, so that the work takes the
// CPU the request path leaves idle instead of delaying it.
//
// Go has no goroutine priorities, and a goroutine that computes for
// milliseconds keeps its thread and its P all along: what the runtime
// queued behind it on that P waits, and so does any thread the kernel
// woke onto the same CPU. On two cores, a batch of 1,000 usage reports
// (about 7 ms of parsing and SQLite) raised the p99 of the model lookups
// sharing the process two- to fourfold; run on a thread of this package,
// it left it within noise (BenchmarkUsageIngest in internal/e2e).
//
// Linux lowers a single thread's priority (setpriority with a thread id);
// elsewhere the threads keep the process's, and Pool.Err says why.
package lowprio

import (
	"context"
	"fmt"
	"runtime"
	"runtime/debug"
	"sync"
)

// Nice is how much nicer than the process a Pool's threads run. Any
// lowering makes the kernel run a request thread it wakes on the same CPU
// at once (the lookups' p99 measured the same from 5 to 19); 10 still
// gives the work about a tenth of a CPU that normal threads contend for,
// where 19 would give it 1.5 %, and on an idle machine it gets a whole CPU
// either way.
const Nice = 10

// Pool runs functions on a fixed number of locked, lowered OS threads.
// Its methods are safe for concurrent use. A nil *Pool runs every function
// on the caller's goroutine.
type Pool struct {
	jobs      chan *job
	quit      chan struct{}
	closeOnce sync.Once
	workers   sync.WaitGroup
	err       error
}

type job struct {
	f        func()
	done     chan struct{}
	panicked *PanicError
}

// New starts workers threads (at least one), Nice nicer than the process,
// and returns once they are ready.
func New(workers int) *Pool {
	p := &Pool{jobs: make(chan *job), quit: make(chan struct{})}
	workers = max(workers, 1)
	ready := make(chan error)
	p.workers.Add(workers)
	for range workers {
		go p.start(ready)
	}
	for range workers {
		if err := <-ready; err != nil && p.err == nil {
			p.err = err
		}
	}
	return p
}

// Err reports why the threads run at the process's priority rather than
// Nice lower (the platform, or the kernel refused), or nil; nil for a nil
// Pool, which starts no thread.
func (p *Pool) Err() error {
	if p == nil {
		return nil
	}
	return p.err
}

// start locks the calling goroutine to a thread and works on it, unless
// that thread is the process's main one: the runtime never ends the main
// thread, and its niceness is the one ps and top show for the whole
// process. Then it starts the worker from there, holding the main thread
// so that the runtime runs the worker on another, and leaves.
func (p *Pool) start(ready chan<- error) {
	runtime.LockOSThread()
	if !onMainThread() {
		p.work(ready)
		return
	}
	locked := make(chan struct{})
	go func() {
		runtime.LockOSThread()
		close(locked)
		p.work(ready)
	}()
	<-locked
	runtime.UnlockOSThread()
}

// work runs jobs on the calling goroutine's thread, locked to it, until
// the pool closes. It never unlocks: a goroutine that returns while
// locked takes its thread with it, so no lowered thread is ever handed
// back to run other goroutines. (The runtime starts new threads from a
// clean one, not from a locked thread, so none inherits the priority.)
func (p *Pool) work(ready chan<- error) {
	defer p.workers.Done()
	ready <- lowerThisThread(Nice)
	for {
		select {
		case j := <-p.jobs:
			j.run()
		case <-p.quit:
			return
		}
	}
}

func (j *job) run() {
	defer func() {
		if v := recover(); v != nil {
			j.panicked = &PanicError{Value: v, Stack: debug.Stack()}
		}
		close(j.done)
	}()
	j.f()
}

// Do runs f on one of the pool's threads and returns when f has returned.
// It waits for a free thread until ctx ends, and then returns ctx's error
// without running f; once f has started, Do waits for it whatever ctx
// does (f is handed ctx by its caller if it should stop early). A panic in
// f is raised again in the caller as a *PanicError. After Close, and on a
// nil Pool, f runs on the caller's goroutine.
func (p *Pool) Do(ctx context.Context, f func()) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if p == nil {
		f()
		return nil
	}
	j := &job{f: f, done: make(chan struct{})}
	select {
	case p.jobs <- j:
	case <-ctx.Done():
		return ctx.Err()
	case <-p.quit:
		f()
		return nil
	}
	<-j.done
	if j.panicked != nil {
		panic(j.panicked)
	}
	return nil
}

// Close ends the threads once they have finished what they run; Do calls
// after it run on their caller.
func (p *Pool) Close() {
	if p == nil {
		return
	}
	p.closeOnce.Do(func() { close(p.quit) })
	p.workers.Wait()
}

// PanicError is a panic raised by a function a Pool ran, with the stack of
// the thread it ran on.
type PanicError struct {
	Value any
	Stack []byte
}

func (e *PanicError) Error() string {
	return fmt.Sprintf("panic on a low-priority thread: %v\n\n%s", e.Value, e.Stack)
}
