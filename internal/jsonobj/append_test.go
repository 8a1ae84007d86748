package jsonobj

import (
	"encoding/json"
	"testing"
	"unicode/utf8"
)

// FuzzAppendEscaped: whatever the string, the result quoted is one valid
// JSON string, and a UTF-8 string reads back as itself.
func FuzzAppendEscaped(f *testing.F) {
	for _, s := range []string{"", "alice", `q"uote\back`, "tab\tnl\ncr\r\x00\x1f\x7f", "<a>&'", "é✓😀", "bad\xffutf8", "\u2028"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		b := append([]byte{'"'}, AppendEscaped(nil, s)...)
		b = append(b, '"')
		var back string
		if err := json.Unmarshal(b, &back); err != nil {
			t.Fatalf("%q escaped as %s: not JSON: %v", s, b, err)
		}
		if utf8.ValidString(s) && back != s {
			t.Fatalf("%q escaped as %s reads back as %q", s, b, back)
		}
	})
}

// FuzzAppendString: AppendString writes what encoding/json.Marshal writes.
func FuzzAppendString(f *testing.F) {
	for _, s := range []string{"", "alice", `q"uote\back`, "\b\f\n\r\t\x00\x1f\x7f", "<a>&'", "é✓😀", "bad\xffutf8\xc3", "\u2028\u2029"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		want, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		if got := AppendString(nil, s); string(got) != string(want) {
			t.Fatalf("AppendString(%q) = %s, encoding/json writes %s", s, got, want)
		}
	})
}
