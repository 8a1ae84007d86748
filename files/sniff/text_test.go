package sniff

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestReaderRefusesText(t *testing.T) {
	const big = 100 << 10 // beyond the window: found while streaming
	at := func(content []byte, off int, bad string) []byte {
		out := append([]byte(nil), content[:off]...)
		return append(append(out, bad...), content[off:]...)
	}
	base := textOf("The quick brown fox jumps over the lazy dog. ", 300<<10)
	tests := []struct {
		name      string
		content   []byte
		offset    int64
		reason    string
		streaming bool // found after the window, on Read
	}{
		{"NUL at 100 KiB", at(base, big, "\x00"), big, reasonControl, true},
		{"NUL in the window", at(base, 1000, "\x00"), 1000, reasonControl, false},
		{"NUL first", []byte("\x00abc"), 0, reasonControl, false},
		{"ESC", at(base, big, "\x1b[31m"), big, reasonControl, true},
		{"vertical tab", at(base, big, "\v"), big, reasonControl, true},
		{"DEL", at(base, big, "\x7f"), big, reasonControl, true},
		{"C1 control U+0085", at(base, big, "\u0085"), big, reasonControl, true},
		{"C1 control U+009F in the window", at(base, 5, "\u009f"), 5, reasonControl, false},
		{"invalid byte 0xFF", at(base, big, "\xff"), big, reasonNotUTF8, true},
		{"lone continuation byte", at(base, big, "\x80"), big, reasonNotUTF8, true},
		{"overlong slash", at(base, big, "\xc0\xaf"), big, reasonNotUTF8, true},
		{"surrogate half", at(base, big, "\xed\xa0\x80"), big, reasonNotUTF8, true},
		{"beyond U+10FFFF", at(base, big, "\xf4\x90\x80\x80"), big, reasonNotUTF8, true},
		{"lead byte then ASCII", at(base, big, "\xe2x"), big, reasonNotUTF8, true},
		{"lead byte then ASCII across the window", at(base, WindowLen-1, "\xe2x"), WindowLen - 1, reasonNotUTF8, true},
		{"truncated rune at the end of a small file", []byte("euro \xe2\x82"), 5, reasonTruncated, false},
		{"truncated rune at the end of a big file", append(base[:big:big], 0xf0, 0x9f, 0x8e), big, reasonTruncated, true},
		{"binary after text", concat(base[:big], pngFile(t)), big, reasonNotUTF8, true},
	}
	for _, tt := range tests {
		for _, rd := range readers {
			t.Run(tt.name+"/"+rd.name, func(t *testing.T) {
				mime, read, err := sniff(t, rd.wrap(bytes.NewReader(tt.content)), tt.content, "a.txt")
				var te *TypeError
				if !errors.As(err, &te) || !errors.Is(err, ErrUnsupportedType) {
					t.Fatalf("err = %v, want a *TypeError", err)
				}
				if !strings.Contains(te.Reason, tt.reason) || te.Offset != tt.offset {
					t.Fatalf("got %q at %d, want %q at %d", te.Reason, te.Offset, tt.reason, tt.offset)
				}
				if (mime != "") != tt.streaming {
					t.Fatalf("refused on Read = %v, want %v", mime != "", tt.streaming)
				}
				// The bytes before the offending sequence come through; so may
				// the first bytes of the sequence, when an earlier Read
				// returned them before the rest arrived.
				if tt.streaming && (mime != MimeText || read < tt.offset || read > tt.offset+3) {
					t.Fatalf("streamed %q and read %d bytes before the error, want %s and %d", mime, read, MimeText, tt.offset)
				}
			})
		}
	}
}

func TestReaderRuneAtTheWindowEdge(t *testing.T) {
	for _, r := range []string{"é", "€", "🎉"} {
		for shift := 1; shift < len(r); shift++ {
			// r starts shift bytes before the window ends: the window holds
			// an incomplete rune that the next bytes complete.
			content := concat(textOf("a", WindowLen-shift), []byte(r), []byte("after"))
			for _, rd := range readers {
				t.Run(fmt.Sprintf("%q-%d/%s", r, shift, rd.name), func(t *testing.T) {
					mime, _, err := sniff(t, rd.wrap(bytes.NewReader(content)), content, "a.md")
					if err != nil || mime != MimeMarkdown {
						t.Fatalf("mime %q, err %v", mime, err)
					}
				})
			}
		}
	}
}

// firstBadText is the plain definition the validator must agree with: the
// offset of the first rune that is invalid UTF-8 or a control character
// other than \t \n \f \r, or -1.
func firstBadText(b []byte) int64 {
	s := string(b)
	for i, r := range s {
		switch {
		case r == utf8.RuneError && !strings.HasPrefix(s[i:], "\uFFFD"),
			r < 0x20 && !strings.ContainsRune("\t\n\f\r", r),
			0x7f <= r && r <= 0x9f:
			return int64(i)
		}
	}
	return -1
}

// TestTextValidatorMatchesDefinition checks the word-at-a-time fast paths
// against firstBadText for every byte and a set of sequences, at every
// alignment, with the input cut in two at every point.
func TestTextValidatorMatchesDefinition(t *testing.T) {
	var seqs [][]byte
	for c := range 256 {
		seqs = append(seqs, []byte{byte(c)})
	}
	for _, s := range []string{"\u0080", "\u0085", "\u009f", "\u00a0", "é", "€", "\u2028", "\ufeff", "\uFFFD", "🎉",
		"\xc2", "\xe2\x82", "\xf0\x9f\x8e", "\xc0\xaf", "\xed\xa0\x80", "\xf4\x90\x80\x80", "\xc2\xc2\x85",
		"\x80\x80", "a\x00b\x7f", "\r\n\t\f"} {
		seqs = append(seqs, []byte(s))
	}
	for _, seq := range seqs {
		for pos := range 17 {
			b := concat(textOf("abcdefgh", pos), seq, textOf("ijklmnop", 17-pos))
			want := firstBadText(b)
			for split := range len(b) + 1 {
				var v textValidator
				err := v.feed(b[:split])
				if err == nil {
					err = v.feed(b[split:])
				}
				if err == nil {
					err = v.end()
				}
				got := int64(-1)
				if err != nil {
					got = err.(*TypeError).Offset
				}
				if got != want {
					t.Fatalf("%q split at %d: first bad at %d, want %d", b, split, got, want)
				}
			}
		}
	}
}
