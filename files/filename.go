package files

import (
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/aigateway/gateway/internal/invalid"
)

// ErrInvalidFilename: the client's filename breaks a rule of
// ValidateFilename, or the part carries none. Returned wrapped in
// *FilenameError (HTTP 400).
var ErrInvalidFilename = errors.New("invalid filename")

// MaxFilenameChars is the longest filename, in characters (runes).
const MaxFilenameChars = 255

// The rules a filename can break, as FilenameError.Rule.
const (
	RuleMissing        = "missing"
	RuleLength         = "length"
	RuleUTF8           = "utf8"
	RuleControl        = "control_character"
	RuleBidi           = "bidi_control"
	RuleReserved       = "reserved_character"
	RuleLeadingSlash   = "leading_slash"
	RuleTrailingSlash  = "trailing_slash"
	RuleEmptySegment   = "empty_segment"
	RuleDotSegment     = "dot_segment"
	reservedCharacters = `<>:"|?*\`
)

var ruleText = map[string]string{
	RuleMissing:       "the file part has no filename",
	RuleLength:        fmt.Sprintf("must be 1 to %d characters", MaxFilenameChars),
	RuleUTF8:          "must be valid UTF-8",
	RuleControl:       "must not contain control characters",
	RuleBidi:          "must not contain bidirectional override or isolate characters",
	RuleReserved:      `must not contain any of < > : " | ? * \`,
	RuleLeadingSlash:  "must not start with /",
	RuleTrailingSlash: "must not end with /",
	RuleEmptySegment:  "must not contain an empty folder name (//)",
	RuleDotSegment:    "must not contain a . or .. folder or file name",
}

// FilenameError says which rule a filename breaks. It unwraps to
// ErrInvalidFilename. Neither its text nor its fields repeat the filename
// (it may hold anything, control characters included), so both are safe to
// show and to log.
type FilenameError struct {
	Rule string // one of the Rule* constants
	// Position is the 1-based character position of the offending character,
	// or of the offending segment's first character; 0 when the rule is about
	// the whole name.
	Position int
}

func (e *FilenameError) Error() string {
	if e.Position > 0 {
		return fmt.Sprintf("%v: %s (character %d)", ErrInvalidFilename, ruleText[e.Rule], e.Position)
	}
	return fmt.Sprintf("%v: %s", ErrInvalidFilename, ruleText[e.Rule])
}

// Unwrap returns ErrInvalidFilename.
func (e *FilenameError) Unwrap() error { return ErrInvalidFilename }

// FieldProblems names the problem under "filename".
func (e *FilenameError) FieldProblems() []invalid.Field {
	return []invalid.Field{{Name: "filename", Problem: ruleText[e.Rule]}}
}

// ValidateFilename checks a client's filename against the upload rules: 1 to
// 255 characters of valid UTF-8; folders separated by "/" are allowed, but
// not a leading or trailing "/", nor an empty, "." or ".." segment; none of
// < > : " | ? * \ and no control character (C0, DEL, C1, and the Unicode line
// and paragraph separators). The first broken rule is returned as a
// *FilenameError.
//
// Bidirectional embedding, override and isolate characters (U+202A-U+202E,
// U+2066-U+2069) are refused too, beyond the letter of the rules: they are
// invisible and reorder what follows, so "invoice\u202Efdp.exe" displays as
// "invoiceexe.pdf" wherever the name is shown again. No legitimate name needs
// them: plain right-to-left text is ordered by the characters themselves.
//
// name must be the raw value the client sent, folders included, not a
// multipart reader's idea of a file name that keeps only the last path
// element: that would silently drop the folders and turn "a/../b" into "b". The name is
// metadata only; storage keys are never derived from it, so Windows device
// names and trailing dots or spaces need no rule here. It is not normalised:
// the name is kept as sent.
func ValidateFilename(name string) error {
	if name == "" {
		return &FilenameError{Rule: RuleLength}
	}
	chars := 0
	for i, r := range name {
		chars++
		switch {
		case r == utf8.RuneError && !strings.HasPrefix(name[i:], "\uFFFD"):
			return &FilenameError{Rule: RuleUTF8, Position: chars}
		case r < 0x20, r == 0x7f, 0x80 <= r && r <= 0x9f, r == '\u2028', r == '\u2029':
			return &FilenameError{Rule: RuleControl, Position: chars}
		case '\u202a' <= r && r <= '\u202e', '\u2066' <= r && r <= '\u2069':
			return &FilenameError{Rule: RuleBidi, Position: chars}
		case strings.ContainsRune(reservedCharacters, r):
			return &FilenameError{Rule: RuleReserved, Position: chars}
		}
	}
	if chars > MaxFilenameChars {
		return &FilenameError{Rule: RuleLength}
	}
	if name[0] == '/' {
		return &FilenameError{Rule: RuleLeadingSlash, Position: 1}
	}
	if name[len(name)-1] == '/' {
		return &FilenameError{Rule: RuleTrailingSlash, Position: chars}
	}
	pos := 1 // character position of the segment's start
	for seg := range strings.SplitSeq(name, "/") {
		switch seg {
		case "":
			return &FilenameError{Rule: RuleEmptySegment, Position: pos}
		case ".", "..":
			return &FilenameError{Rule: RuleDotSegment, Position: pos}
		}
		pos += utf8.RuneCountInString(seg) + 1
	}
	return nil
}
