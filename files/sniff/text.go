// UTF-8 text: its validation as it streams, and the text subtypes (Markdown,
// CSV, JSON, JSON Lines) chosen from the filename.

package sniff

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"io"
	"math/bits"
	"path"
	"strings"
	"unicode/utf8"
)

// textSubtype picks the text type from the filename's extension when the
// sniffed (already validated) window agrees with it, else text/plain.
// b excludes a rune cut by the window's end; eof says b is the whole file.
func textSubtype(filename string, b []byte, eof bool) string {
	b = bytes.TrimPrefix(b, []byte("\xef\xbb\xbf"))
	switch strings.ToLower(path.Ext(filename)) {
	case ".md", ".markdown":
		return MimeMarkdown
	case ".csv":
		return MimeCSV
	case ".json":
		if t := bytes.TrimLeft(b, jsonSpace); len(t) > 0 && (t[0] == '{' || t[0] == '[') && oneJSONValue(t, eof) {
			return MimeJSON
		}
	case ".jsonl", ".ndjson":
		line, _, found := bytes.Cut(b, []byte("\n"))
		if oneJSONValue(line, eof || found) {
			return MimeNDJSON
		}
	}
	return MimeText
}

const jsonSpace = " \t\r\n"

// oneJSONValue reports whether b holds exactly one JSON value, surrounded
// only by whitespace; when complete is false b may stop inside that value,
// as long as what is there is a valid beginning of one.
func oneJSONValue(b []byte, complete bool) bool {
	if len(bytes.Trim(b, jsonSpace)) == 0 {
		return false
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	err := dec.Decode(new(skipJSON))
	switch {
	case err == nil:
		return len(bytes.Trim(b[dec.InputOffset():], jsonSpace)) == 0
	case errors.Is(err, io.ErrUnexpectedEOF):
		return !complete
	}
	return false
}

// skipJSON lets the decoder check syntax without building a value.
type skipJSON struct{}

func (skipJSON) UnmarshalJSON([]byte) error { return nil }

// textOK marks the ASCII bytes text may contain: printable characters and
// \t \n \f \r. NUL, other C0 controls and DEL mark binary content.
var textOK = func() (t [utf8.RuneSelf]bool) {
	for c := 0x20; c < 0x7f; c++ {
		t[c] = true
	}
	for _, c := range "\t\n\f\r" {
		t[c] = true
	}
	return t
}()

// textValidator checks a stream of UTF-8 text fed in arbitrary pieces: a
// rune cut between two pieces is carried over, not misjudged.
type textValidator struct {
	carry [utf8.UTFMax]byte // the start of a rune cut at the end of the last piece
	nc    int
	off   int64 // stream offset just past the bytes fed so far
}

// feed validates p and returns a *TypeError whose Offset is the stream
// offset of the first unacceptable rune.
//
// Text is checked in two fast passes over each piece, utf8.Valid and a scan
// for control characters eight bytes at a time; only a piece that fails
// either is walked rune by rune to find where.
func (v *textValidator) feed(p []byte) error {
	start := v.off
	v.off += int64(len(p))
	i := 0
	if v.nc > 0 {
		// Complete the rune begun in the last piece.
		var r [utf8.UTFMax]byte
		n := copy(r[:], v.carry[:v.nc])
		k := copy(r[n:], p)
		if !utf8.FullRune(r[:n+k]) {
			v.carry, v.nc = r, n+k
			return nil
		}
		size, bad := checkRune(r[:n+k])
		if bad != "" {
			return &TypeError{Reason: bad, Offset: start - int64(v.nc)}
		}
		i, v.nc = size-v.nc, 0
	}
	body := p[i:]
	// Hold back a rune cut by the end of the piece: its first byte is among
	// the last three, and what is there is not a full rune yet.
	cut := len(body)
	for j := len(body) - 1; j >= 0 && j > len(body)-utf8.UTFMax; j-- {
		if utf8.RuneStart(body[j]) {
			if !utf8.FullRune(body[j:]) {
				cut = j
			}
			break
		}
	}
	if !utf8.Valid(body[:cut]) {
		return slowCheck(body[:cut], start+int64(i))
	}
	if c := controlIndex(body[:cut]); c >= 0 {
		return &TypeError{Reason: reasonControl, Offset: start + int64(i+c)}
	}
	v.nc = copy(v.carry[:], body[cut:])
	return nil
}

// slowCheck walks b, full runes only, and reports the first unacceptable
// one at its offset from start.
func slowCheck(b []byte, start int64) error {
	for i := 0; i < len(b); {
		size, bad := checkRune(b[i:])
		if bad != "" {
			return &TypeError{Reason: bad, Offset: start + int64(i)}
		}
		i += size
	}
	return nil
}

const (
	swarLow  = 0x0101010101010101
	swarHigh = 0x8080808080808080
	swarLow7 = 0x7f7f7f7f7f7f7f7f
)

// zeroBytes returns x with the top bit set in exactly the bytes that are 0
// (no borrow crosses bytes: the additions never overflow one).
func zeroBytes(x uint64) uint64 { return ^((x&swarLow7 + swarLow7) | x | swarLow7) }

// controlIndex returns the index of the first control character in b, which
// must be valid UTF-8, or -1. Controls are the bytes below 0x20 other than
// \t \n \f \r, DEL, and the C1 controls U+0080-U+009F, encoded 0xC2 0x80-0x9F.
// It looks at eight bytes at a time, with exact per-byte masks, so a line
// break costs no more than any other byte; only a word holding 0xC2 (whose
// next byte decides) is looked at byte by byte.
func controlIndex(b []byte) int {
	for i := 0; i < len(b); {
		for ; i+8 <= len(b); i += 8 {
			x := binary.LittleEndian.Uint64(b[i:])
			// Bytes below 0x20: with the top bit forced on, subtracting
			// 0x20 clears it exactly in those (and never borrows).
			low := ^(x | swarHigh - swarLow*0x20) &^ x & swarHigh
			if low != 0 {
				low &^= zeroBytes(x^(swarLow*'\n')) | zeroBytes(x^(swarLow*'\r')) |
					zeroBytes(x^(swarLow*'\t')) | zeroBytes(x^(swarLow*'\f'))
			}
			if zeroBytes(x^(swarLow*0xc2)) != 0 {
				break
			}
			if bad := low | zeroBytes(x^(swarLow*0x7f)); bad != 0 {
				return i + bits.TrailingZeros64(bad)/8
			}
		}
		for end := min(i+8, len(b)); i < end; i++ {
			switch c := b[i]; {
			case c < 0x20 && !textOK[c], c == 0x7f:
				return i
			case c == 0xc2 && i+1 < len(b) && b[i+1] < 0xa0:
				return i
			}
		}
	}
	return -1
}

// checkRune decodes the full rune at the start of b and refuses invalid
// UTF-8 (including surrogates and overlong forms) and C1 controls.
func checkRune(b []byte) (size int, reason string) {
	r, size := utf8.DecodeRune(b)
	switch {
	case r == utf8.RuneError && size == 1:
		return 0, reasonNotUTF8
	case r < 0x20 || 0x7f <= r && r <= 0x9f:
		if r < utf8.RuneSelf && textOK[r] {
			return size, ""
		}
		return 0, reasonControl
	}
	return size, ""
}

// end reports a rune left incomplete by the end of the stream.
func (v *textValidator) end() error {
	if v.nc > 0 {
		return &TypeError{Reason: reasonTruncated, Offset: v.off - int64(v.nc)}
	}
	return nil
}
