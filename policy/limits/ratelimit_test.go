package limits

import (
	"context"
	"errors"
	"testing"
	"time"
)

func TestLimitValidate(t *testing.T) {
	tests := []struct {
		l  Limit
		ok bool
	}{
		{Limit{Rate: 1, Per: time.Second}, true},
		{Limit{Rate: 1, Per: time.Second, Burst: 10}, true},
		{Limit{Rate: 0, Per: time.Second, Burst: 1}, false},
		{Limit{Rate: 1, Per: 0, Burst: 1}, false},
		{Limit{Rate: 1, Per: -time.Second, Burst: 1}, false},
		{Limit{Rate: 1, Per: time.Second, Burst: -1}, false},
	}
	for _, tc := range tests {
		err := tc.l.Validate()
		if (err == nil) != tc.ok || (err != nil && !errors.Is(err, ErrInvalidLimit)) {
			t.Errorf("%+v: Validate() = %v, want ok=%v", tc.l, err, tc.ok)
		}
		// Every limiter refuses an invalid limit the same way.
		if !tc.ok {
			if _, err := NewLocalLimiter(LocalOptions{}).Allow(context.Background(), "k", tc.l, 1); !errors.Is(err, ErrInvalidLimit) {
				t.Errorf("%+v: Allow err = %v, want ErrInvalidLimit", tc.l, err)
			}
		}
	}
}

func TestExceedsBurstError(t *testing.T) {
	_, err := NewLocalLimiter(LocalOptions{}).Allow(context.Background(), "k", Limit{Rate: 10, Per: time.Second, Burst: 4}, 5)
	var e *ExceedsBurstError
	if !errors.As(err, &e) || !errors.Is(err, ErrExceedsBurst) {
		t.Fatalf("err = %v, want *ExceedsBurstError wrapping ErrExceedsBurst", err)
	}
	if e.Cost != 5 || e.Burst != 4 {
		t.Errorf("Cost, Burst = %d, %d, want 5, 4", e.Cost, e.Burst)
	}
}

func TestStrictest(t *testing.T) {
	a := Decision{Allowed: true, Limit: 10, Remaining: 7}
	b := Decision{Allowed: true, Limit: 10, Remaining: 2}
	c := Decision{Allowed: false, Limit: 10, RetryAfter: time.Second}
	d := Decision{Allowed: false, Limit: 10, RetryAfter: 3 * time.Second}
	tests := []struct {
		name string
		in   []Decision
		want Decision
	}{
		{"none", nil, Decision{Allowed: true}},
		{"fewest remaining", []Decision{a, b}, b},
		{"a denial wins", []Decision{a, c, b}, c},
		{"longest denial wins", []Decision{c, a, d}, d},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := Strictest(tc.in); got != tc.want {
				t.Errorf("Strictest = %+v, want %+v", got, tc.want)
			}
			if got, want := Allowed(tc.in), tc.want.Allowed; got != want {
				t.Errorf("Allowed = %v, want %v", got, want)
			}
		})
	}
}
