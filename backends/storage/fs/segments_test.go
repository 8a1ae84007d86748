package fs

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"testing"
)

// Every range of an object of segments (empty ones among them) reads as
// the same range of their concatenation, by Read and by WriteTo.
func TestSegmentsReaderRanges(t *testing.T) {
	dir := t.TempDir()
	sizes := []int64{3, 0, 5, 1, 0, 4}
	var whole []byte
	open := func() []*os.File {
		files := make([]*os.File, len(sizes))
		for i := range sizes {
			f, err := os.Open(filepath.Join(dir, segmentName(i)))
			if err != nil {
				t.Fatal(err)
			}
			files[i] = f
		}
		return files
	}
	for i, n := range sizes {
		data := bytes.Repeat([]byte{byte('a' + i)}, int(n))
		whole = append(whole, data...)
		if err := os.WriteFile(filepath.Join(dir, segmentName(i)), data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	total := int64(len(whole))
	for offset := int64(0); offset <= total; offset++ {
		for length := int64(1); offset+length <= total+2; length++ {
			want := whole[offset:min(offset+length, total)]
			for _, how := range []string{"Read", "WriteTo"} {
				r, err := newSegmentsReader(open(), sizes, offset, length)
				if err != nil {
					t.Fatal(err)
				}
				var got bytes.Buffer
				if how == "Read" {
					_, err = io.Copy(&got, struct{ io.Reader }{r}) // Read, in whatever pieces Copy asks
				} else {
					_, err = r.WriteTo(&got)
				}
				r.Close()
				if err != nil || !bytes.Equal(got.Bytes(), want) {
					t.Fatalf("%s of [%d, +%d) = %q, %v; want %q", how, offset, length, got.Bytes(), err, want)
				}
			}
		}
	}
}

// A segment shorter than its directory said is an error, never a short
// object that reads as whole.
func TestSegmentsReaderShrunkSegment(t *testing.T) {
	dir := t.TempDir()
	name := filepath.Join(dir, "seg")
	if err := os.WriteFile(name, []byte("abc"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, how := range []string{"Read", "WriteTo"} {
		f, err := os.Open(name)
		if err != nil {
			t.Fatal(err)
		}
		r, err := newSegmentsReader([]*os.File{f}, []int64{10}, 0, 10)
		if err != nil {
			t.Fatal(err)
		}
		if how == "Read" {
			_, err = io.ReadAll(struct{ io.Reader }{r})
		} else {
			_, err = r.WriteTo(io.Discard)
		}
		r.Close()
		if err != io.ErrUnexpectedEOF {
			t.Errorf("%s of a shrunk segment = %v, want io.ErrUnexpectedEOF", how, err)
		}
	}
}
