package jsonobj

import "unicode/utf8"

const hexDigits = "0123456789abcdef"

// AppendString appends s as a JSON string, quoted and escaped exactly as
// encoding/json.Marshal writes it: '"' and '\\' behind a backslash; \b,
// \f, \n, \r and \t by name and the other control characters as \u00XX;
// <, > and & as \u003c, \u003e and \u0026 (HTML-safe); U+2028 and U+2029
// as \u2028 and \u2029; and each byte of invalid UTF-8 as \ufffd.
func AppendString(b []byte, s string) []byte {
	b = append(b, '"')
	b = appendEscaped(b, s, true)
	return append(b, '"')
}

// AppendEscaped appends s escaped for the inside of a JSON string (the
// quotes are the caller's), the way zap does it: quote, backslash and
// control characters escaped (\n, \r, \t, else \u00XX), HTML characters
// and U+2028/U+2029 as they are, and each byte of invalid UTF-8 as \ufffd.
func AppendEscaped(b []byte, s string) []byte {
	return appendEscaped(b, s, false)
}

// appendEscaped escapes as encoding/json does when std, as zap does if not.
func appendEscaped(b []byte, s string, std bool) []byte {
	safe := &zapSafe
	if std {
		safe = &stdSafe
	}
	done := 0 // s[:done] is in b
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if safe[c] {
				i++
				continue
			}
			b = append(b, s[done:i]...)
			switch {
			case c == '"' || c == '\\':
				b = append(b, '\\', c)
			case c == '\n':
				b = append(b, '\\', 'n')
			case c == '\r':
				b = append(b, '\\', 'r')
			case c == '\t':
				b = append(b, '\\', 't')
			case std && c == '\b':
				b = append(b, '\\', 'b')
			case std && c == '\f':
				b = append(b, '\\', 'f')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			}
			i++
			done = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			b = append(b, s[done:i]...)
			b = append(b, `\ufffd`...)
		case std && (r == '\u2028' || r == '\u2029'):
			b = append(b, s[done:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hexDigits[r&0xf])
		default:
			i += size
			continue
		}
		i += size
		done = i
	}
	return append(b, s[done:]...)
}

// zapSafe and stdSafe say which ASCII bytes appendEscaped copies as they
// are, the zap way and the encoding/json way: one load per byte on the
// access log's path, where most strings need no escaping at all.
var zapSafe, stdSafe = safeASCII(false), safeASCII(true)

func safeASCII(std bool) (t [utf8.RuneSelf]bool) {
	for c := range t {
		t[c] = c >= 0x20 && c != '"' && c != '\\' && (!std || c != '<' && c != '>' && c != '&')
	}
	return t
}
