package limits

import (
	"context"
	"errors"
	"testing"
	"time"
)

func TestLocalInFlight(t *testing.T) {
	ctx := context.Background()
	in := NewLocalInFlight()
	r1, ok1, err1 := in.Acquire(ctx, "k", 2, time.Minute)
	r2, ok2, err2 := in.Acquire(ctx, "k", 2, time.Minute)
	r3, ok3, err3 := in.Acquire(ctx, "k", 2, time.Minute)
	if err := errors.Join(err1, err2, err3); err != nil {
		t.Fatal(err)
	}
	if !ok1 || !ok2 || ok3 {
		t.Fatalf("ok = %v %v %v, want true true false", ok1, ok2, ok3)
	}
	r3() // the no-op release of a refusal frees nothing
	if n := in.InUse("k"); n != 2 {
		t.Fatalf("in use = %d, want 2", n)
	}
	r1()
	r1() // twice is harmless
	if n := in.InUse("k"); n != 1 {
		t.Fatalf("in use = %d after one release, want 1", n)
	}
	if _, ok, _ := in.Acquire(ctx, "k", 2, time.Minute); !ok {
		t.Fatal("slot not given back")
	}
	if _, ok, _ := in.Acquire(ctx, "other", 1, time.Minute); !ok {
		t.Fatal("keys are not independent")
	}
	r2()

	for _, bad := range []struct {
		max int
		ttl time.Duration
	}{{0, time.Minute}, {1, 0}} {
		if rel, _, err := in.Acquire(ctx, "k", bad.max, bad.ttl); !errors.Is(err, ErrInvalidLimit) || rel == nil {
			t.Errorf("Acquire(max %d, ttl %s) err = %v, want ErrInvalidLimit and a non-nil release", bad.max, bad.ttl, err)
		}
	}
}
