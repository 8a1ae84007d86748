package catalog

import (
	"net/url"
	"strings"
	"unicode/utf8"
)

// MaxSegmentLen bounds a decoded author or slug path segment, in bytes. The
// longest id of the public catalog is under 60 bytes.
const MaxSegmentLen = 256

// ValidSegment reports whether s, an already percent-decoded author or slug
// path segment, may be looked up: not empty, at most MaxSegmentLen bytes,
// valid UTF-8, and free of '/', '\\' and control characters (a '/' can only
// come from an encoded slash, which must not reach across segments).
// A valid segment may still name nothing (404); an invalid one is a 400.
func ValidSegment(s string) bool {
	if s == "" || len(s) > MaxSegmentLen || !utf8.ValidString(s) {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c == 0x7f || c == '/' || c == '\\' {
			return false
		}
	}
	return true
}

// DecodeSegment percent-decodes one raw path segment (as it appears in the
// request's escaped path, e.g. "gpt-4%3Afree" or "%7Eopenai") and checks it
// with ValidSegment. It allocates only when the segment contains a '%'.
func DecodeSegment(raw string) (string, bool) {
	if raw == "" || len(raw) > 3*MaxSegmentLen {
		return "", false
	}
	s := raw
	if strings.IndexByte(raw, '%') >= 0 {
		var err error
		if s, err = url.PathUnescape(raw); err != nil {
			return "", false
		}
	}
	if !ValidSegment(s) {
		return "", false
	}
	return s, true
}
