// Text sent in pieces: each piece is checked as it streams, apart from the
// others, and the pieces are joined later from what each one's edges hold,
// without reading any of them again.

package sniff

import (
	"encoding/hex"
	"errors"
	"strings"
	"unicode/utf8"
)

// Piece learns, as the bytes of one piece of a larger stream are written
// to it, whether the piece can belong to text: its bytes are acceptable
// text except for a rune cut at either end, whose bytes it keeps. Pieces
// may be cut anywhere, so a piece may start with up to three continuation
// bytes and end inside a rune. Write never fails; once the piece is found
// not to be text, the rest is not looked at.
type Piece struct {
	head    [utf8.UTFMax - 1]byte
	nh      int
	started bool // a rune started in this piece
	binary  bool
	v       textValidator
}

// Write looks at b.
func (p *Piece) Write(b []byte) (int, error) {
	n := len(b)
	if p.binary {
		return n, nil
	}
	for !p.started && len(b) > 0 {
		if utf8.RuneStart(b[0]) {
			p.started = true
			break
		}
		if p.nh == len(p.head) {
			p.binary = true // a rune has at most three continuation bytes
			return n, nil
		}
		p.head[p.nh] = b[0]
		p.nh++
		b = b[1:]
	}
	if len(b) > 0 && p.v.feed(b) != nil {
		p.binary = true
	}
	return n, nil
}

// Summary returns what the piece's edges hold, and false when the piece
// cannot belong to text.
func (p *Piece) Summary() (PieceSummary, bool) {
	if p.binary {
		return PieceSummary{}, false
	}
	return PieceSummary{
		Head: append([]byte(nil), p.head[:p.nh]...),
		Tail: append([]byte(nil), p.v.carry[:p.v.nc]...),
		Body: p.started,
	}, true
}

// PieceSummary is what joining a text piece to its neighbours needs.
type PieceSummary struct {
	Head []byte // continuation bytes before the piece's first rune
	Tail []byte // the start of a rune cut by the piece's end
	Body bool   // a rune starts in the piece (else it is all Head)
}

// String encodes s compactly, for storing beside the piece: "t" (for
// text), the hex of Head, ".", the hex of Tail, "." and 1 or 0 for Body.
func (s PieceSummary) String() string {
	body := "0"
	if s.Body {
		body = "1"
	}
	return "t" + hex.EncodeToString(s.Head) + "." + hex.EncodeToString(s.Tail) + "." + body
}

var errBadSummary = errors.New("sniff: malformed piece summary")

// ParsePieceSummary decodes what String encoded.
func ParsePieceSummary(v string) (PieceSummary, error) {
	rest, ok := strings.CutPrefix(v, "t")
	fields := strings.Split(rest, ".")
	if !ok || len(fields) != 3 || (fields[2] != "0" && fields[2] != "1") {
		return PieceSummary{}, errBadSummary
	}
	head, err1 := hex.DecodeString(fields[0])
	tail, err2 := hex.DecodeString(fields[1])
	if err1 != nil || err2 != nil || len(head) >= utf8.UTFMax || len(tail) >= utf8.UTFMax {
		return PieceSummary{}, errBadSummary
	}
	return PieceSummary{Head: head, Tail: tail, Body: fields[2] == "1"}, nil
}

// JoinPieces checks that pieces, each acceptable text apart from its
// edges, form acceptable text in the order given: every rune cut between
// pieces (across as many as it spans) is whole and acceptable, and the
// last one is not cut by the end. It returns nil or a *TypeError without
// an offset (the pieces' bytes are not at hand).
func JoinPieces(pieces []PieceSummary) error {
	var v textValidator
	for _, p := range pieces {
		if err := v.feed(p.Head); err != nil {
			return refused(err.(*TypeError).Reason)
		}
		if !p.Body {
			continue
		}
		if v.nc != 0 {
			return refused(reasonNotUTF8) // a rune cut, then a new one begun
		}
		v.nc = copy(v.carry[:], p.Tail)
	}
	if v.nc != 0 {
		return refused(reasonTruncated)
	}
	return nil
}
