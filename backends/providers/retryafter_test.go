package providers

import (
	"net/http"
	"testing"
	"time"
)

func TestParseRetryAfter(t *testing.T) {
	now := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		v    string
		want time.Duration
	}{
		{"", 0},
		{"0", 0},
		{"-5", 0},
		{"30", 30 * time.Second},
		{"999999999999999999", 24 * time.Hour},
		{"1.5", 0},
		{"soon", 0},
		{now.Add(2 * time.Minute).Format(http.TimeFormat), 2 * time.Minute},
		{now.Add(-time.Minute).Format(http.TimeFormat), 0},
		{now.Add(72 * time.Hour).Format(http.TimeFormat), 24 * time.Hour},
		{"Sunday, 23-Nov-26 12:00:10 GMT", 10 * time.Second}, // RFC 850, which RFC 9110 still accepts
	}
	for _, tt := range tests {
		if got := parseRetryAfter(tt.v, now); got != tt.want {
			t.Errorf("parseRetryAfter(%q) = %v, want %v", tt.v, got, tt.want)
		}
	}
	// A date between whole seconds waits the whole second.
	if got := parseRetryAfter(now.Add(10*time.Second).Format(http.TimeFormat), now.Add(-300*time.Millisecond)); got != 11*time.Second {
		t.Errorf("rounded to %v, want 11s", got)
	}
}
