package files

import (
	"errors"
	"strings"
	"testing"

	"github.com/aigateway/gateway/internal/invalid"
)

func TestValidateFilenameAccepts(t *testing.T) {
	for _, name := range []string{
		"a",
		"report.pdf",
		"docs/2026/report.pdf",
		"with space and (parens) [brackets] {braces} #hash %22 ' ` ~ ! @ $ & = + ; ,.txt",
		".hidden",
		"a/.b/c..d/...",
		"résumé.docx",
		"東京/議事録.md",
		"שלום.txt",   // right-to-left text orders itself; no control needed
		"🎉.png",      // one character, four bytes
		"\uFFFD.txt", // U+FFFD written out is a character, not invalid UTF-8
		strings.Repeat("界", MaxFilenameChars),
		strings.Repeat("a/", 127) + "b", // 255 characters
		"a.", " leading and trailing space ",
		"👨\u200d👩\u200d👧.png", // the zero-width joiners of an emoji sequence
	} {
		t.Run(name, func(t *testing.T) {
			if err := ValidateFilename(name); err != nil {
				t.Fatalf("ValidateFilename(%q) = %v", name, err)
			}
		})
	}
}

func TestValidateFilenameRefuses(t *testing.T) {
	tests := []struct {
		name     string
		filename string
		rule     string
		position int
	}{
		{"empty", "", RuleLength, 0},
		{"256 characters", strings.Repeat("a", MaxFilenameChars+1), RuleLength, 0},
		{"256 characters of 3 bytes", strings.Repeat("界", MaxFilenameChars+1), RuleLength, 0},
		{"invalid byte", "ab\xff.txt", RuleUTF8, 3},
		{"invalid byte after multi-byte", "é\xc3", RuleUTF8, 2},
		{"surrogate half", "\xed\xa0\x80.txt", RuleUTF8, 1},
		{"overlong", "\xc0\xaf", RuleUTF8, 1},
		{"less than", "a<b", RuleReserved, 2},
		{"greater than", "a>b", RuleReserved, 2},
		{"colon", "C:report", RuleReserved, 2},
		{"double quote", `say "hi"`, RuleReserved, 5},
		{"pipe", "a|b", RuleReserved, 2},
		{"question mark", "why?", RuleReserved, 4},
		{"asterisk", "*.txt", RuleReserved, 1},
		{"backslash", `docs\a.txt`, RuleReserved, 5},
		{"windows path", `C:\fakepath\a.txt`, RuleReserved, 2},
		{"NUL", "a\x00.txt", RuleControl, 2},
		{"tab", "a\tb", RuleControl, 2},
		{"newline", "a\nb", RuleControl, 2},
		{"unit separator", "\x1f", RuleControl, 1},
		{"DEL", "a\x7f", RuleControl, 2},
		{"C1 NEL", "a\u0085b", RuleControl, 2},
		{"C1 APC", "é\u009f", RuleControl, 2},
		{"line separator", "a\u2028b", RuleControl, 2},
		{"paragraph separator", "a\u2029b", RuleControl, 2},
		{"right-to-left override", "invoice\u202efdp.exe", RuleBidi, 8},
		{"left-to-right embedding", "\u202aa", RuleBidi, 1},
		{"first strong isolate", "a\u2068b", RuleBidi, 2},
		{"pop directional isolate", "a\u2069", RuleBidi, 2},
		{"right-to-left mark", "a\u200fb.txt", RuleBidi, 2},
		{"zero-width space", "in\u200bvoice.pdf", RuleInvisible, 3},
		{"byte order mark", "\ufeffreport.pdf", RuleInvisible, 1},
		{"leading slash", "/etc/passwd", RuleLeadingSlash, 1},
		{"only a slash", "/", RuleLeadingSlash, 1},
		{"trailing slash", "docs/", RuleTrailingSlash, 5},
		{"empty segment", "docs//a.txt", RuleEmptySegment, 6},
		{"dot", ".", RuleDotSegment, 1},
		{"dot dot", "..", RuleDotSegment, 1},
		{"dot segment first", "./a.txt", RuleDotSegment, 1},
		{"dot segment inside", "a/./b", RuleDotSegment, 3},
		{"dot dot segment inside", "a/../b", RuleDotSegment, 3},
		{"dot dot segment last", "é/..", RuleDotSegment, 3},
		{"traversal", "../../etc/passwd", RuleDotSegment, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := ValidateFilename(tt.filename)
			var fe *FilenameError
			if !errors.As(err, &fe) || !errors.Is(err, ErrInvalidFilename) {
				t.Fatalf("err = %v, want a *FilenameError", err)
			}
			if fe.Rule != tt.rule || fe.Position != tt.position {
				t.Fatalf("rule %q at %d, want %q at %d", fe.Rule, fe.Position, tt.rule, tt.position)
			}
			if f := invalid.Fields(err); len(f) != 1 || f[0] != (invalid.Field{Name: "filename", Problem: ruleText[tt.rule]}) {
				t.Fatalf("field problems = %v", f)
			}
			if len(tt.filename) > 3 && strings.Contains(err.Error(), tt.filename) {
				t.Fatalf("error text %q repeats the filename", err)
			}
		})
	}
}

func TestFilenameErrorText(t *testing.T) {
	err := ValidateFilename("a|b")
	if got := err.Error(); got != `invalid filename: must not contain any of < > : " | ? * \ (character 2)` {
		t.Fatalf("Error() = %q", got)
	}
	err = ValidateFilename("")
	if got := err.Error(); got != "invalid filename: must be 1 to 255 characters" {
		t.Fatalf("Error() = %q", got)
	}
	for rule, text := range ruleText {
		if text == "" {
			t.Errorf("rule %q has no text", rule)
		}
	}
}
