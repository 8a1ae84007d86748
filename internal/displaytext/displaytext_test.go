package displaytext

import (
	"strings"
	"testing"
)

func TestCheckAccepts(t *testing.T) {
	for _, s := range []string{
		"", "ci", "résumé", "東京の鍵", "שלום עולם", "مفتاح الإنتاج",
		"\uFFFD written out",
		"👨\u200d👩\u200d👧 family", // the zero-width joiner of an emoji sequence
		"می\u200cخواهم",          // the zero-width non-joiner Persian needs
		"🏴\U000E0067\U000E0062\U000E0065\U000E006E\U000E0067\U000E007F", // a subdivision flag's tag characters
		"tab-free name with spaces", "\u00a0no-break space",
	} {
		if rule, pos := Check(s); rule != OK || pos != 0 {
			t.Errorf("Check(%q) = %v at %d, want OK", s, rule, pos)
		}
	}
}

func TestCheckRefuses(t *testing.T) {
	for _, tt := range []struct {
		name string
		s    string
		rule Rule
		pos  int
	}{
		{"invalid byte", "ab\xff", InvalidUTF8, 3},
		{"surrogate half", "\xed\xa0\x80", InvalidUTF8, 1},
		{"NUL", "a\x00", Control, 2},
		{"newline", "a\nb", Control, 2},
		{"escape", "\x1b[2J", Control, 1},
		{"DEL", "a\x7f", Control, 2},
		{"C1 NEL", "é\u0085", Control, 2},
		{"line separator", "a\u2028b", Control, 2},
		{"paragraph separator", "a\u2029b", Control, 2},
		{"right-to-left override", "invoice\u202efdp.exe", Bidi, 8},
		{"left-to-right embedding", "\u202aa", Bidi, 1},
		{"first strong isolate", "a\u2068b", Bidi, 2},
		{"pop directional isolate", "a\u2069", Bidi, 2},
		{"left-to-right mark", "a\u200eb", Bidi, 2},
		{"right-to-left mark", "a\u200fb", Bidi, 2},
		{"Arabic letter mark", "\u061ca", Bidi, 1},
		{"zero-width space", "ad\u200bmin", Invisible, 3},
		{"word joiner", "a\u2060", Invisible, 2},
		{"invisible times", "a\u2062b", Invisible, 2},
		{"byte order mark", "\ufeffprod", Invisible, 1},
		{"soft hyphen", "pro\u00adduction", Invisible, 4},
		{"Mongolian vowel separator", "a\u180e", Invisible, 2},
		{"deprecated format control", "a\u206ab", Invisible, 2},
		{"interlinear annotation", "a\ufff9b", Invisible, 2},
		{"first of several", "a\u200b\u202e\x00", Invisible, 2},
	} {
		t.Run(tt.name, func(t *testing.T) {
			rule, pos := Check(tt.s)
			if rule != tt.rule || pos != tt.pos {
				t.Fatalf("Check(%q) = %v at %d, want %v at %d", tt.s, rule, pos, tt.rule, tt.pos)
			}
			if p := rule.Problem(); !strings.HasPrefix(p, "must ") {
				t.Errorf("rule %v has no problem text: %q", rule, p)
			}
		})
	}
	if OK.Problem() != "" {
		t.Error("OK has a problem text")
	}
}
