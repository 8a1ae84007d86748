package seal

import (
	"bytes"
	"errors"
	"testing"
)

func testSealer(t *testing.T, fill byte) *Sealer {
	t.Helper()
	s, err := NewSealer(bytes.Repeat([]byte{fill}, KeySize))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestSealRoundTrip(t *testing.T) {
	s := testSealer(t, 7)
	key := NewSecret(plainKey)
	a, err := s.Seal("ws-1", "openai", key)
	if err != nil {
		t.Fatal(err)
	}
	b, err := s.Seal("ws-1", "openai", key)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Equal(a, b) {
		t.Fatal("two seals of one key are equal: nonce reused")
	}
	if bytes.Contains(a, []byte(plainKey)) {
		t.Fatal("sealed value contains the plaintext")
	}
	if want := 1 + 12 + len(plainKey) + 16; len(a) != want {
		t.Fatalf("sealed length %d, want %d (version, 96-bit nonce, ciphertext, tag)", len(a), want)
	}
	for _, sealed := range [][]byte{a, b} {
		got, err := s.Open("ws-1", "openai", sealed)
		if err != nil {
			t.Fatal(err)
		}
		if got.Reveal() != plainKey {
			t.Fatalf("opened %q", got.Reveal())
		}
	}
}

func TestOpenRefuses(t *testing.T) {
	s := testSealer(t, 7)
	sealed, err := s.Seal("ab", "c", NewSecret(plainKey))
	if err != nil {
		t.Fatal(err)
	}
	flip := func(i int) []byte {
		c := bytes.Clone(sealed)
		c[i] ^= 0x01
		return c
	}
	tests := []struct {
		name     string
		sealer   *Sealer
		ws, prov string
		sealed   []byte
	}{
		{"other workspace", s, "ab2", "c", sealed},
		{"other provider", s, "ab", "d", sealed},
		{"fields shifted", s, "a", "bc", sealed},
		{"other key", testSealer(t, 8), "ab", "c", sealed},
		{"version byte", s, "ab", "c", flip(0)},
		{"nonce", s, "ab", "c", flip(3)},
		{"ciphertext", s, "ab", "c", flip(1 + 12 + 2)},
		{"tag", s, "ab", "c", flip(len(sealed) - 1)},
		{"truncated", s, "ab", "c", sealed[:len(sealed)-1]},
		{"too short", s, "ab", "c", sealed[:10]},
		{"empty", s, "ab", "c", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tt.sealer.Open(tt.ws, tt.prov, tt.sealed)
			if !errors.Is(err, ErrUnseal) {
				t.Fatalf("err = %v, want ErrUnseal", err)
			}
			if !got.IsZero() {
				t.Fatal("a refused Open returned a key")
			}
		})
	}
}

func TestNewSealerKeySize(t *testing.T) {
	for _, n := range []int{0, 16, 24, 31, 33} {
		if _, err := NewSealer(make([]byte, n)); !errors.Is(err, ErrKeySize) {
			t.Fatalf("%d bytes: err = %v, want ErrKeySize", n, err)
		}
	}
	if _, err := testSealer(t, 1).Seal("ws", "openai", Secret{}); !errors.Is(err, ErrInvalidKey) {
		t.Fatalf("sealing an empty key: err = %v, want ErrInvalidKey", err)
	}
}
