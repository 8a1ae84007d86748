package console

import "testing"

// TestDetailsSayWhatTheMessageDoesNot: a refusal's metadata is shown as
// words after the API's message, leaving out what only repeats it.
func TestDetailsSayWhatTheMessageDoesNot(t *testing.T) {
	for _, tt := range []struct {
		name string
		meta map[string]any
		want string
	}{
		{"rate limit", map[string]any{"limit": "rate", "retry_after_seconds": 3.0}, "retry after seconds: 3"},
		{"key limit in dollars", map[string]any{"limit": 5.0, "limit_reset": "daily"}, "limit: 5; limit reset: daily"},
		{"rule", map[string]any{"rule": "bidi_control", "position": 4.0}, "position: 4"},
		{"fields", map[string]any{"fields": map[string]any{"slug": "must be lowercase"}}, "slug must be lowercase"},
		{"counts", map[string]any{"keys": 1.0, "files": 2.0}, "files: 2; keys: 1"},
		// JSON numbers arrive as float64: a byte limit reads as digits.
		{"large number", map[string]any{"max_file_bytes": 10485760.0}, "max file bytes: 10485760"},
		{"budget in dollars", map[string]any{"limit": 12.5}, "limit: 12.5"},
	} {
		if got := details(tt.meta); got != tt.want {
			t.Errorf("%s: details(%v) = %q, want %q", tt.name, tt.meta, got, tt.want)
		}
	}
}
