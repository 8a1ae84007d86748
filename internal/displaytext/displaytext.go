// Package displaytext is the one rule of the names the gateway shows to
// people again: file names, and the names of keys, provider keys and
// workspaces. Such a name is read in the console, in listings and in
// terminals, by someone who did not choose it, so it must not hold
// characters that make it look like another name: control characters
// (which a terminal may act on), bidirectional controls (which reorder
// what follows) and invisible formatting characters (which hide inside a
// name that looks like a familiar one).
//
// Nothing else is refused: right-to-left text orders itself without
// controls, and the zero-width joiner and non-joiner stay allowed, since
// emoji sequences and several scripts (Persian, the Indic scripts) need
// them.
package displaytext

import (
	"strings"
	"unicode/utf8"
)

// Rule is a class of characters a name shown to people must not hold.
type Rule int

// The rules, in the order Check applies them to each character.
const (
	// OK: the name breaks no rule.
	OK Rule = iota
	// InvalidUTF8: a byte sequence that is not UTF-8 (a literal U+FFFD is
	// a character and passes).
	InvalidUTF8
	// Control: C0, DEL, C1, and the Unicode line and paragraph separators.
	Control
	// Bidi: the bidirectional embeddings, overrides and isolates
	// (U+202A-U+202E, U+2066-U+2069) and marks (U+200E, U+200F, U+061C).
	// "invoice\u202Efdp.exe" displays as "invoiceexe.pdf".
	Bidi
	// Invisible: characters that take no room and show nothing: the soft
	// hyphen, the zero-width space, the word joiner and the invisible
	// operators, the byte order mark (zero-width no-break space), the
	// Mongolian vowel separator, the deprecated format controls
	// U+206A-U+206F and the interlinear annotation controls. "ad\u200Bmin"
	// displays as "admin".
	Invisible
)

// Problem is the rule's text as a field problem: what the name must not
// contain.
func (r Rule) Problem() string {
	switch r {
	case InvalidUTF8:
		return "must be valid UTF-8"
	case Control:
		return "must not contain control characters"
	case Bidi:
		return "must not contain bidirectional control characters"
	case Invisible:
		return "must not contain invisible formatting characters"
	}
	return ""
}

// RuneRule is the rule the character r breaks, or OK. r is a decoded
// character: an invalid byte sequence is the caller's to find (Check does).
func RuneRule(r rune) Rule {
	switch {
	case r < 0x20, r == 0x7f, 0x80 <= r && r <= 0x9f, r == '\u2028', r == '\u2029':
		return Control
	case '\u202a' <= r && r <= '\u202e', '\u2066' <= r && r <= '\u2069',
		r == '\u200e', r == '\u200f', r == '\u061c':
		return Bidi
	case r == '\u00ad', r == '\u180e', r == '\u200b', '\u2060' <= r && r <= '\u2064',
		'\u206a' <= r && r <= '\u206f', r == '\ufeff', '\ufff9' <= r && r <= '\ufffb':
		return Invisible
	}
	return OK
}

// Check returns the first rule s breaks and the 1-based character position
// of the character that breaks it; OK and 0 when s breaks none.
func Check(s string) (rule Rule, position int) {
	chars := 0
	for i, r := range s {
		chars++
		if r == utf8.RuneError && !strings.HasPrefix(s[i:], "\uFFFD") {
			return InvalidUTF8, chars
		}
		if rule := RuneRule(r); rule != OK {
			return rule, chars
		}
	}
	return OK, 0
}
