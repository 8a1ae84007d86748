package files

import (
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/aigateway/gateway/internal/displaytext"
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
	RuleInvisible      = "invisible_character"
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
	RuleUTF8:          displaytext.InvalidUTF8.Problem(),
	RuleControl:       displaytext.Control.Problem(),
	RuleBidi:          displaytext.Bidi.Problem(),
	RuleInvisible:     displaytext.Invisible.Problem(),
	RuleReserved:      `must not contain any of < > : " | ? * \`,
	RuleLeadingSlash:  "must not start with /",
	RuleTrailingSlash: "must not end with /",
	RuleEmptySegment:  "must not contain an empty folder name (//)",
	RuleDotSegment:    "must not contain a . or .. folder or file name",
}

// displayRules names the rules of displaytext as rules of a filename.
var displayRules = map[displaytext.Rule]string{
	displaytext.InvalidUTF8: RuleUTF8,
	displaytext.Control:     RuleControl,
	displaytext.Bidi:        RuleBidi,
	displaytext.Invisible:   RuleInvisible,
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
// Bidirectional controls and invisible formatting characters are refused
// too, beyond the letter of the rules, by the rule every name shown to
// people follows (internal/displaytext): they are invisible and reorder or
// disguise the name, so "invoice\u202Efdp.exe" displays as "invoiceexe.pdf"
// wherever the name is shown again. No legitimate name needs them: plain
// right-to-left text is ordered by the characters themselves.
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
		if r == utf8.RuneError && !strings.HasPrefix(name[i:], "\uFFFD") {
			return &FilenameError{Rule: RuleUTF8, Position: chars}
		}
		if rule := displaytext.RuneRule(r); rule != displaytext.OK {
			return &FilenameError{Rule: displayRules[rule], Position: chars}
		}
		if strings.ContainsRune(reservedCharacters, r) {
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
