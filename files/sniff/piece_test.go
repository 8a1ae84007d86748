package sniff

import (
	"errors"
	"math/rand/v2"
	"testing"
)

// summaries cuts b at cuts and summarises each piece, written in small
// writes so a rune is also cut between writes.
func summaries(t *testing.T, b []byte, cuts []int) ([]PieceSummary, bool) {
	t.Helper()
	var out []PieceSummary
	prev := 0
	for _, c := range append(cuts, len(b)) {
		var p Piece
		for i := prev; i < c; i += 3 {
			_, _ = p.Write(b[i:min(i+3, c)])
		}
		s, ok := p.Summary()
		if !ok {
			return nil, false
		}
		// Stored and read back, as the upload store keeps it.
		back, err := ParsePieceSummary(s.String())
		if err != nil {
			t.Fatalf("ParsePieceSummary(%q): %v", s.String(), err)
		}
		out = append(out, back)
		prev = c
	}
	return out, true
}

func TestJoinPiecesAcceptsTextCutAnywhere(t *testing.T) {
	text := []byte("héllo wörld ✓ 𝄞 naïve café, ünïcödé 日本語 \t\r\n")
	rng := rand.New(rand.NewPCG(1, 2))
	for round := 0; round < 2000; round++ {
		// Up to eight cuts anywhere, one-byte pieces included.
		var cuts []int
		at := 0
		for range rng.IntN(8) + 1 {
			at += rng.IntN(6) + 1
			if at >= len(text) {
				break
			}
			cuts = append(cuts, at)
		}
		pieces, ok := summaries(t, text, cuts)
		if !ok {
			t.Fatalf("cuts %v: a piece of valid text was taken for binary", cuts)
		}
		if err := JoinPieces(pieces); err != nil {
			t.Fatalf("cuts %v: %v", cuts, err)
		}
	}
}

func TestJoinPiecesRefuses(t *testing.T) {
	// A piece holding a control character or invalid UTF-8 is not text.
	for _, b := range [][]byte{[]byte("ab\x00cd"), []byte("ab\xffcd"), []byte("\x80\x80\x80\x80ab")} {
		if _, ok := summaries(t, b, nil); ok {
			t.Errorf("%q taken for text", b)
		}
	}
	text := []byte("aé✓b") // a, é (2 bytes), ✓ (3 bytes), b
	var te *TypeError
	for name, order := range map[string][]int{
		"a rune's halves swapped": {1, 0, 2},
		"a rune's start twice":    {0, 0, 2},
	} {
		pieces, ok := summaries(t, text, []int{2, 4})
		if !ok {
			t.Fatal("pieces of text taken for binary")
		}
		var got []PieceSummary
		for _, i := range order {
			got = append(got, pieces[i])
		}
		if err := JoinPieces(got); !errors.As(err, &te) || !errors.Is(err, ErrUnsupportedType) {
			t.Errorf("%s: %v, want a TypeError", name, err)
		}
	}
	// The end cuts a rune.
	pieces, _ := summaries(t, text[:4], []int{2})
	if err := JoinPieces(pieces); !errors.As(err, &te) || te.Reason != reasonTruncated {
		t.Errorf("text ending inside a rune: %v", err)
	}
	// A C1 control cut across two pieces is found at the seam.
	pieces, _ = summaries(t, []byte("a\xc2\x85b"), []int{2})
	if err := JoinPieces(pieces); !errors.As(err, &te) {
		t.Errorf("a C1 control across a seam: %v", err)
	}
	if _, err := ParsePieceSummary("x"); err == nil {
		t.Error("a malformed summary parsed")
	}
}
