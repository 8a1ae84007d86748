package lowprio

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
)

func TestDoGivesUpWaitingWhenItsContextEnds(t *testing.T) {
	p := New(1)
	defer p.Close()
	release := make(chan struct{})
	started := make(chan struct{})
	go func() {
		_ = p.Do(context.Background(), func() { close(started); <-release })
	}()
	<-started // the only thread is busy

	ctx, cancel := context.WithCancel(context.Background())
	var ran atomic.Bool
	errc := make(chan error)
	go func() { errc <- p.Do(ctx, func() { ran.Store(true) }) }()
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Errorf("Do = %v, want context.Canceled", err)
	}
	close(release)
	if err := p.Do(context.Background(), func() {}); err != nil {
		t.Fatal(err)
	}
	if ran.Load() {
		t.Error("a function whose context ended while waiting was run")
	}
}

func TestDoRaisesAPanicInTheCaller(t *testing.T) {
	p := New(1)
	defer p.Close()
	func() {
		defer func() {
			pe, ok := recover().(*PanicError)
			if !ok || pe.Value != "boom" || !strings.Contains(string(pe.Stack), "lowprio.TestDoRaisesAPanicInTheCaller") {
				t.Errorf("recovered %#v, want a *PanicError of \"boom\" with the worker's stack", pe)
			}
		}()
		_ = p.Do(context.Background(), func() { panic("boom") })
		t.Error("Do returned after a panic")
	}()
	ran := false
	if err := p.Do(context.Background(), func() { ran = true }); err != nil || !ran {
		t.Errorf("after a panic: Do = %v, ran %v; the thread should live on", err, ran)
	}
}

func TestThreadsRunAtOnce(t *testing.T) {
	p := New(2)
	defer p.Close()
	// Each function waits for the other: with fewer than two threads
	// running at once this never returns (and the test times out).
	a, b := make(chan struct{}), make(chan struct{})
	errc := make(chan error, 2)
	go func() { errc <- p.Do(context.Background(), func() { close(a); <-b }) }()
	go func() { errc <- p.Do(context.Background(), func() { close(b); <-a }) }()
	for range 2 {
		if err := <-errc; err != nil {
			t.Fatal(err)
		}
	}
}

func TestDoAfterCloseAndOnNilRunsOnTheCaller(t *testing.T) {
	p := New(1)
	p.Close()
	p.Close() // twice is harmless
	if err := (*Pool)(nil).Err(); err != nil {
		t.Errorf("nil Pool Err = %v", err)
	}
	for _, p := range []*Pool{p, nil} {
		ran := false
		if err := p.Do(context.Background(), func() { ran = true }); err != nil || !ran {
			t.Errorf("Do = %v, ran %v; want the function run", err, ran)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := p.Do(ctx, func() { t.Error("ran with its context ended") }); !errors.Is(err, context.Canceled) {
		t.Errorf("Do with an ended context = %v, want context.Canceled", err)
	}
}
