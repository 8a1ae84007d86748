package storagetest_test

// Unit tests of the helpers that files/blob gives its implementations. They
// live here, beside the contract suite, because files/blob holds only the
// contract itself.

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/aigateway/gateway/backends/storage/storagetest"
	"github.com/aigateway/gateway/files/blob"
)

func TestValidateKey(t *testing.T) {
	good := []string{"a", "ws/0b9d/f_1", "ws/x-y/z.pdf", "é/ü", strings.Repeat("a", blob.MaxKeyLen)}
	for _, k := range good {
		if err := blob.ValidateKey(k); err != nil {
			t.Errorf("ValidateKey(%q) = %v, want nil", k, err)
		}
	}
	bad := []string{"", "/a", "a/", "a//b", "./a", "a/..", ".hidden", "a/.b", "a\\b", "a\tb", "a\x7fb", "\xc3", strings.Repeat("a", blob.MaxKeyLen+1)}
	for _, k := range bad {
		err := blob.ValidateKey(k)
		var ke *blob.KeyError
		if !errors.Is(err, blob.ErrInvalidKey) || !errors.As(err, &ke) || ke.Key != k {
			t.Errorf("ValidateKey(%q) = %v, want a *KeyError for it", k, err)
		}
	}
}

func TestBodyEnforcesKnownSize(t *testing.T) {
	data := storagetest.Data(1, 10000)
	cases := []struct {
		name     string
		len      int
		declared int64
		wantErr  bool
	}{
		{"exact", 10000, 10000, false},
		{"unknown", 10000, -1, false},
		{"empty exact", 0, 0, false},
		{"short", 9999, 10000, true},
		{"long", 10000, 9999, true},
		{"empty declared one", 0, 1, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b := blob.NewBody(storagetest.ChunkedReader(data[:tc.len]), tc.declared)
			got, err := io.ReadAll(b)
			if !tc.wantErr {
				if err != nil || len(got) != tc.len || b.N() != int64(tc.len) || b.Err() != nil {
					t.Fatalf("read %d bytes (N %d), err %v, Err %v; want %d and no error", len(got), b.N(), err, b.Err(), tc.len)
				}
				return
			}
			var se *blob.SizeError
			if !errors.As(err, &se) || !errors.Is(b.Err(), blob.ErrSizeMismatch) || se.Declared != tc.declared {
				t.Fatalf("err %v, Err %v; want a *SizeError declaring %d", err, b.Err(), tc.declared)
			}
			if int64(len(got)) > tc.declared {
				t.Errorf("handed out %d bytes, more than the declared %d", len(got), tc.declared)
			}
			if md := se.Metadata(); md["declared_bytes"] != tc.declared {
				t.Errorf("Metadata = %v", md)
			}
		})
	}
}

// A multipart body cut short ends in io.ErrUnexpectedEOF from the reader
// itself; Fill must report it, not take it for a clean end as io.ReadFull
// would.
func TestBodyFillKeepsUnexpectedEOF(t *testing.T) {
	r := &storagetest.FailingReader{R: strings.NewReader(strings.Repeat("x", 100)), After: 50, Err: io.ErrUnexpectedEOF}
	b := blob.NewBody(r, -1)
	n, err := b.Fill(make([]byte, 80))
	if n != 50 || err != io.ErrUnexpectedEOF || b.Err() != io.ErrUnexpectedEOF {
		t.Fatalf("Fill = %d, %v (Err %v); want 50, io.ErrUnexpectedEOF", n, err, b.Err())
	}
	n, err = blob.NewBody(strings.NewReader("abc"), 3).Fill(make([]byte, 80))
	if n != 3 || err != io.EOF {
		t.Fatalf("Fill of a short clean body = %d, %v; want 3, io.EOF", n, err)
	}
	n, err = blob.NewBody(strings.NewReader("abc"), -1).Fill(make([]byte, 2))
	if n != 2 || err != nil {
		t.Fatalf("Fill of a full buffer = %d, %v; want 2, nil", n, err)
	}
}

func TestBodyCausePrecedence(t *testing.T) {
	readerErr := errors.New("client went away")
	backendErr := errors.New("backend failed")
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()

	failed := blob.NewBody(&storagetest.FailingReader{R: strings.NewReader("abc"), After: 1, Err: readerErr}, -1)
	io.ReadAll(failed)
	if got := failed.Cause(cancelled, backendErr); got != readerErr {
		t.Errorf("with a reader error: Cause = %v, want the reader's error", got)
	}
	clean := blob.NewBody(strings.NewReader("abc"), -1)
	if got := clean.Cause(cancelled, backendErr); !errors.Is(got, context.Canceled) {
		t.Errorf("with ctx cancelled: Cause = %v, want context.Canceled", got)
	}
	if got := clean.Cause(context.Background(), backendErr); got != backendErr {
		t.Errorf("otherwise: Cause = %v, want the backend's error", got)
	}
}
