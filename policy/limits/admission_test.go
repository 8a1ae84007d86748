package limits

import (
	"context"
	"errors"
	"testing"
	"time"
)

func newTestAdmission(now *time.Time) *UploadAdmission {
	return &UploadAdmission{
		Limiter:     NewLocalLimiter(LocalOptions{Now: func() time.Time { return *now }}),
		InFlight:    NewLocalInFlight(),
		Files:       Limit{Rate: 100, Per: time.Minute, Burst: 100},
		Bytes:       Limit{Rate: 1000, Per: time.Hour, Burst: 1000},
		MaxInFlight: 2,
		LeaseTTL:    time.Minute,
	}
}

func TestAdmissionByteBudget(t *testing.T) {
	now := time.Unix(0, 0)
	a := newTestAdmission(&now)
	ctx := context.Background()

	// More than the whole budget can never pass: a 413, not a 429.
	if _, err := a.Admit(ctx, "k", "w", 1001); !errors.Is(err, ErrExceedsBurst) {
		t.Fatalf("declared > budget: %v, want ErrExceedsBurst", err)
	}
	release, err := a.Admit(ctx, "k", "w", 800)
	if err != nil {
		t.Fatal(err)
	}
	// Only 200 left now: 300 must wait, with a Retry-After.
	_, err = a.Admit(ctx, "k", "w", 300)
	var le *LimitedError
	if !errors.As(err, &le) || !errors.Is(err, ErrRateLimited) || le.Reason != LimitUploadBytes || le.Decision.RetryAfter <= 0 || le.Decision.Limit != 1000 {
		t.Fatalf("over the remaining budget: %v, want a LimitedError on upload_bytes", err)
	}
	// The upload turned out to be 100 bytes: 700 come back.
	release(100)
	release(100) // twice is harmless
	r2, err := a.Admit(ctx, "k", "w", 850)
	if err != nil {
		t.Fatalf("after the refund 850 must fit: %v", err)
	}
	r2(850)
	// Another workspace has its own budget.
	r3, err := a.Admit(ctx, "k2", "other", 900)
	if err != nil {
		t.Fatalf("other workspace: %v", err)
	}
	r3(900)
}

func TestAdmissionInFlightPerKey(t *testing.T) {
	now := time.Unix(0, 0)
	a := newTestAdmission(&now)
	ctx := context.Background()
	r1, err := a.Admit(ctx, "k", "w", 1)
	if err != nil {
		t.Fatal(err)
	}
	r2, err := a.Admit(ctx, "k", "w", 1)
	if err != nil {
		t.Fatal(err)
	}
	_, err = a.Admit(ctx, "k", "w", 1)
	var le *LimitedError
	if !errors.Is(err, ErrTooManyUploads) || !errors.As(err, &le) {
		t.Fatalf("third upload in flight: %v, want a LimitedError wrapping ErrTooManyUploads", err)
	}
	// The denial describes the in-flight limit, not a rate.
	want := Decision{Limit: 2, RetryAfter: time.Second, ResetAfter: time.Second}
	if le.Reason != LimitUploadsInFlight || le.Decision != want {
		t.Errorf("denial = %q %+v, want %q %+v", le.Reason, le.Decision, LimitUploadsInFlight, want)
	}
	if _, err := a.Admit(ctx, "other-key", "w", 1); err != nil {
		t.Fatalf("another key is not capped by this one: %v", err)
	}
	r1(1)
	if r, err := a.Admit(ctx, "k", "w", 1); err != nil {
		t.Fatalf("after a release: %v", err)
	} else {
		r(1)
	}
	r2(1)
}

func TestAdmissionDeniedChargesNothing(t *testing.T) {
	now := time.Unix(0, 0)
	a := newTestAdmission(&now)
	a.Files = Limit{Rate: 1, Per: time.Hour, Burst: 1}
	ctx := context.Background()
	r, err := a.Admit(ctx, "k", "w", 500)
	if err != nil {
		t.Fatal(err)
	}
	r(500)
	// The files rate denies the second upload; its bytes must not be kept.
	_, err = a.Admit(ctx, "k", "w", 400)
	var le *LimitedError
	if !errors.Is(err, ErrRateLimited) || !errors.As(err, &le) {
		t.Fatalf("second upload: %v, want a LimitedError wrapping ErrRateLimited", err)
	}
	// The denial carries the decision of the limit that denied, not of the
	// byte budget that had room.
	if le.Reason != LimitUploads || le.Decision.Allowed || le.Decision.Limit != 1 || le.Decision.RetryAfter <= 0 {
		t.Errorf("denial = %q %+v, want the files rate's", le.Reason, le.Decision)
	}
	a.Files = Limit{}
	if r, err := a.Admit(ctx, "k", "w", 500); err != nil {
		t.Fatalf("the denied upload's bytes were charged: %v", err)
	} else {
		r(500)
	}
	// And the denied upload released its in-flight lease.
	if got := a.InFlight.(*LocalInFlight).InUse(UploadsInFlightKey("k")); got != 0 {
		t.Fatalf("leases in use = %d, want 0", got)
	}
}
