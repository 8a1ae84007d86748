package jsonobj

import "unicode/utf8"

const hexDigits = "0123456789abcdef"

// AppendEscaped appends s escaped for the inside of a JSON string (the
// quotes are the caller's), the way zap does it:
// quote, backslash and control characters escaped (\n, \r, \t, else
// \u00XX), HTML characters as they are, and each byte of invalid UTF-8 as
// U+FFFD, as encoding/json and zap write it.
func AppendEscaped(b []byte, s string) []byte {
	last := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c >= utf8.RuneSelf {
			r, size := utf8.DecodeRuneInString(s[i:])
			if r != utf8.RuneError || size != 1 {
				i += size
				continue
			}
			b = append(b, s[last:i]...)
			b = append(b, `\ufffd`...)
			i++
			last = i
			continue
		}
		if c >= 0x20 && c != '\\' && c != '"' {
			i++
			continue
		}
		b = append(b, s[last:i]...)
		switch c {
		case '\\', '"':
			b = append(b, '\\', c)
		case '\n':
			b = append(b, '\\', 'n')
		case '\r':
			b = append(b, '\\', 'r')
		case '\t':
			b = append(b, '\\', 't')
		default:
			b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
		}
		i++
		last = i
	}
	return append(b, s[last:]...)
}
