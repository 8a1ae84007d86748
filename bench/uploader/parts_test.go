package main

import (
	"bytes"
	"context"
	"crypto/md5"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

// The parts of a file, read apart, are the file: the gateway joins them
// and must get back what a single upload sends.
func TestFileBytesSpans(t *testing.T) {
	block, err := newBlock()
	if err != nil {
		t.Fatal(err)
	}
	const size = 3*blockSize + 12345
	whole, err := io.ReadAll(fileBytes(block, 0, size))
	if err != nil {
		t.Fatal(err)
	}
	if len(whole) != size || !bytes.HasPrefix(whole, []byte(pdfHeader)) {
		t.Fatalf("whole: %d bytes, prefix %q", len(whole), whole[:9])
	}
	for _, part := range []int64{1, 5, 9, 10, blockSize - 3, blockSize + 7, size} {
		cfg := partsConfig{size: size, part: part, conc: 1}
		if part < 100 {
			cfg.size = 100 // every byte of the header's edge, quickly
		}
		var joined []byte
		for i := range cfg.count() {
			off, n := cfg.span(i)
			b, err := io.ReadAll(fileBytes(block, off, n))
			if err != nil {
				t.Fatal(err)
			}
			if int64(len(b)) != n {
				t.Fatalf("part %d of %d bytes: read %d, want %d", i, part, len(b), n)
			}
			joined = append(joined, b...)
		}
		if !bytes.Equal(joined, whole[:cfg.size]) {
			t.Errorf("parts of %d bytes do not join into the file", part)
		}
	}
}

// A fake Uploads resource: it keeps the parts' bytes and, at completion,
// checks the order, the size and the md5 as the gateway does.
type fakeUploads struct {
	mu       sync.Mutex
	parts    map[string][]byte
	inFlight int
	maxSeen  int
}

func (f *fakeUploads) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	fail := func(code int, msg string) {
		w.WriteHeader(code)
		fmt.Fprintf(w, `{"error":{"code":%d,"message":%q}}`, code, msg)
	}
	if r.Header.Get("Authorization") != "Bearer k" {
		fail(401, "key")
		return
	}
	switch {
	case r.URL.Path == "/api/v1/uploads":
		var c struct {
			Bytes int64 `json:"bytes"`
		}
		if err := json.NewDecoder(r.Body).Decode(&c); err != nil || c.Bytes <= 0 {
			fail(400, "bytes")
			return
		}
		fmt.Fprint(w, `{"id":"upload_1","object":"upload","status":"pending"}`)
	case r.URL.Path == "/api/v1/uploads/upload_1/parts":
		f.mu.Lock()
		f.inFlight++
		f.maxSeen = max(f.maxSeen, f.inFlight)
		f.mu.Unlock()
		defer func() { f.mu.Lock(); f.inFlight--; f.mu.Unlock() }()
		_, params, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
		p, err := multipart.NewReader(r.Body, params["boundary"]).NextPart()
		if err != nil || p.FormName() != "data" {
			fail(400, "data")
			return
		}
		b, err := io.ReadAll(p)
		if err != nil {
			fail(400, "read")
			return
		}
		f.mu.Lock()
		id := fmt.Sprintf("part_%d", len(f.parts))
		f.parts[id] = b
		f.mu.Unlock()
		fmt.Fprintf(w, `{"id":%q,"object":"upload.part"}`, id)
	case r.URL.Path == "/api/v1/uploads/upload_1/complete":
		var c struct {
			PartIDs []string `json:"part_ids"`
			MD5     string   `json:"md5"`
		}
		if err := json.NewDecoder(r.Body).Decode(&c); err != nil {
			fail(400, "json")
			return
		}
		var file []byte
		for _, id := range c.PartIDs {
			file = append(file, f.parts[id]...)
		}
		if c.MD5 != "" {
			sum := md5.Sum(file)
			if hex.EncodeToString(sum[:]) != c.MD5 {
				fail(400, "md5")
				return
			}
		}
		fmt.Fprintf(w, `{"id":"upload_1","status":"completed","file":{"bytes":%d}}`, len(file))
	default:
		fail(404, "route")
	}
}

func TestParts(t *testing.T) {
	const size = 5*blockSize + 77
	for _, tc := range []struct {
		name string
		args []string
	}{
		{"plain", nil},
		{"md5", []string{"-md5"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fake := &fakeUploads{parts: map[string][]byte{}}
			srv := httptest.NewServer(fake)
			defer srv.Close()
			var out strings.Builder
			args := append([]string{"parts", "-url", srv.URL + "/api/v1", "-key", "k",
				"-size", fmt.Sprint(size), "-part", fmt.Sprint(blockSize), "-c", "3"}, tc.args...)
			if err := run(context.Background(), args, &out); err != nil {
				t.Fatal(err)
			}
			if got := out.String(); !strings.HasPrefix(got, fmt.Sprintf("uploads=1 bytes=%d parts=6 ", size)) ||
				!strings.Contains(got, " complete_mbps=") {
				t.Errorf("line %q", got)
			}
			if fake.maxSeen > 3 {
				t.Errorf("%d parts in flight, want at most 3", fake.maxSeen)
			}
		})
	}
}

// A completion the server refuses is an error, not a figure.
func TestPartsRefused(t *testing.T) {
	fake := &fakeUploads{parts: map[string][]byte{}}
	srv := httptest.NewServer(fake)
	defer srv.Close()
	err := run(context.Background(), []string{"parts", "-url", srv.URL + "/api/v1", "-key", "wrong",
		"-size", "100", "-part", "10"}, io.Discard)
	if err == nil {
		t.Fatal("a refused upload gave no error")
	}
}

// upload -n sends n uploads, -c at a time.
func TestUploadCount(t *testing.T) {
	var mu sync.Mutex
	got := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n, _ := io.Copy(io.Discard, r.Body)
		mu.Lock()
		got++
		mu.Unlock()
		fmt.Fprintf(w, `{"body_bytes":%d}`, n)
	}))
	defer srv.Close()
	var out strings.Builder
	if err := run(context.Background(), []string{"upload", "-url", srv.URL, "-size", "1000", "-c", "2", "-n", "5"}, &out); err != nil {
		t.Fatal(err)
	}
	if got != 5 || !strings.HasPrefix(out.String(), "uploads=5 bytes=5000 ") {
		t.Errorf("%d uploads received, line %q", got, out.String())
	}
}
