package gcs

import (
	"errors"
	"testing"
	"time"

	"google.golang.org/api/googleapi"
)

// A streak of retryable failures is retried until it has lasted the limit;
// a failure more than the limit after the previous one starts a new
// streak, and an error the library would not retry is never retried.
func TestRetryStreak(t *testing.T) {
	const limit = 10 * time.Second
	base := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	var at time.Duration
	r := &retryStreak{limit: limit, now: func() time.Time { return base.Add(at) }}
	unavailable := &googleapi.Error{Code: 503}
	for _, step := range []struct {
		at   time.Duration
		want bool
	}{
		{0, true},
		{4 * time.Second, true},
		{9 * time.Second, true},
		{10 * time.Second, false}, // the streak has lasted the limit
		{21 * time.Second, true},  // 11 s after the last failure: a new streak
		{31 * time.Second, false},
	} {
		at = step.at
		if got := r.shouldRetry(unavailable); got != step.want {
			t.Errorf("failure at %v: retry = %v, want %v", step.at, got, step.want)
		}
	}
	at = 0
	if r.shouldRetry(&googleapi.Error{Code: 400}) || r.shouldRetry(errors.New("not retryable")) {
		t.Error("an error the library does not retry was retried")
	}
}
