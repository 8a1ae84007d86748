package catalog

import (
	"strings"
	"testing"
)

func TestDecodeSegment(t *testing.T) {
	tests := []struct {
		raw, want string
		ok        bool
	}{
		{"gpt-4o", "gpt-4o", true},
		{"gpt-oss-20b%3Afree", "gpt-oss-20b:free", true},
		{"gpt-oss-20b:free", "gpt-oss-20b:free", true},
		{"%7Eopenai", "~openai", true},
		{"%7eopenai", "~openai", true},
		{"caf%C3%A9", "café", true},
		{"", "", false},
		{"a%2Fb", "", false},  // encoded slash
		{"a%2fb", "", false},  // encoded slash, lower case
		{"a%5Cb", "", false},  // encoded backslash
		{"a%00b", "", false},  // NUL
		{"a%0Ab", "", false},  // newline
		{"a%7Fb", "", false},  // DEL
		{"%FF%FE", "", false}, // invalid UTF-8
		{"a%zzb", "", false},  // bad escape
		{"a%", "", false},     // truncated escape
		{"a/b", "", false},    // a raw slash never belongs to one segment
		{strings.Repeat("a", MaxSegmentLen), strings.Repeat("a", MaxSegmentLen), true},
		{strings.Repeat("a", MaxSegmentLen+1), "", false},
		{strings.Repeat("%41", MaxSegmentLen+1), "", false},
	}
	for _, tc := range tests {
		name := tc.raw
		if len(name) > 20 {
			name = name[:20] + "..."
		}
		t.Run(name, func(t *testing.T) {
			got, ok := DecodeSegment(tc.raw)
			if ok != tc.ok || got != tc.want {
				t.Errorf("DecodeSegment(%q) = %q, %v; want %q, %v", tc.raw, got, ok, tc.want, tc.ok)
			}
			if ok && !ValidSegment(got) {
				t.Error("decoded segment is not valid")
			}
		})
	}
	if n := testing.AllocsPerRun(100, func() { DecodeSegment("gpt-4o") }); n != 0 {
		t.Errorf("DecodeSegment of a plain segment: %v allocs, want 0", n)
	}
}
