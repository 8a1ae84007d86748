package client

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// uploadServer parses the multipart form as the gateway does, streaming,
// and answers the file it read. firstChunk, when set, is signalled once the
// first bytes of the file part arrived.
type uploadServer struct {
	contentLength atomic.Int64
	chunked       atomic.Bool
	complete      atomic.Int32
	purpose       atomic.Value
	firstChunk    chan struct{}
}

func (s *uploadServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.contentLength.Store(r.ContentLength)
	s.chunked.Store(len(r.TransferEncoding) > 0 && r.TransferEncoding[0] == "chunked")
	_, params, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if err != nil {
		writeEnvelope(w, 400, "Invalid request parameters", nil)
		return
	}
	mr := multipart.NewReader(r.Body, params["boundary"])
	var name string
	var size int64
	for {
		p, err := mr.NextPart()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			writeEnvelope(w, 400, "Invalid request parameters", nil)
			return
		}
		if p.FormName() == "purpose" {
			b, _ := io.ReadAll(p)
			s.purpose.Store(string(b))
			continue
		}
		name = p.FileName()
		buf := make([]byte, 4)
		n, err := io.ReadFull(p, buf)
		size += int64(n)
		if s.firstChunk != nil && n > 0 {
			close(s.firstChunk)
		}
		if err == nil {
			m, err := io.Copy(io.Discard, p)
			size += m
			if err != nil {
				writeEnvelope(w, 400, "Invalid request parameters", nil)
				return
			}
		}
	}
	s.complete.Add(1)
	w.Header().Set("Content-Type", "application/json")
	fmt.Fprintf(w, `{"_shape":"service","id":"file-1","type":"file","filename":%q,"mime_type":"text/plain","size_bytes":%d,"downloadable":false,"created_at":"2026-11-23T12:00:00Z"}`, name, size)
}

func TestUploadKnownAndUnknownSize(t *testing.T) {
	data := strings.Repeat("streamed bytes\n", 10000)
	for _, tc := range []struct {
		name string
		size int64
	}{{"known", int64(len(data))}, {"unknown", UnknownSize}} {
		t.Run(tc.name, func(t *testing.T) {
			us := &uploadServer{}
			srv := httptest.NewServer(us)
			defer srv.Close()
			c, _ := newTestClient(t, srv)
			f, err := c.UploadFile(context.Background(), Upload{Filename: "ä \"q\".txt", Content: strings.NewReader(data), Size: tc.size, Purpose: "batch"})
			if err != nil {
				t.Fatal(err)
			}
			if f.ID != "file-1" || f.SizeBytes != int64(len(data)) || f.Filename != `ä "q".txt` {
				t.Errorf("file = %+v", f)
			}
			if us.purpose.Load() != "batch" {
				t.Errorf("purpose = %v", us.purpose.Load())
			}
			if tc.size >= 0 && (us.contentLength.Load() <= tc.size || us.chunked.Load()) {
				t.Errorf("Content-Length %d (chunked %v), want the exact length of the form", us.contentLength.Load(), us.chunked.Load())
			}
			if tc.size < 0 && (us.contentLength.Load() != -1 || !us.chunked.Load()) {
				t.Errorf("Content-Length %d (chunked %v), want chunked", us.contentLength.Load(), us.chunked.Load())
			}
		})
	}
}

// The content goes out as it is read: the server sees the first bytes
// before the rest of the content exists. A client that buffered the whole
// content first would wait for ever here (bounded by the context).
func TestUploadStreams(t *testing.T) {
	for _, size := range []int64{8, UnknownSize} {
		t.Run(strconv.FormatInt(size, 10), func(t *testing.T) {
			us := &uploadServer{firstChunk: make(chan struct{})}
			srv := httptest.NewServer(us)
			defer srv.Close()
			c, _ := newTestClient(t, srv)
			pr, pw := io.Pipe()
			go func() {
				_, _ = pw.Write([]byte("head"))
				select {
				case <-us.firstChunk:
					_, _ = pw.Write([]byte("tail"))
					pw.Close()
				case <-time.After(10 * time.Second):
					pw.CloseWithError(errors.New("the server never saw the first bytes: the upload is buffered"))
				}
			}()
			f, err := c.UploadFile(context.Background(), Upload{Filename: "s.txt", Content: pr, Size: size})
			if err != nil {
				t.Fatal(err)
			}
			if f.SizeBytes != 8 {
				t.Errorf("size = %d", f.SizeBytes)
			}
		})
	}
}

// Content that does not hold its declared size fails the upload, and the
// server never receives a complete form it could store.
func TestUploadSizeMismatch(t *testing.T) {
	for _, tc := range []struct {
		name, data string
		size       int64
	}{{"shorter", "abc", 10}, {"longer", "abcdefghijkl", 10}} {
		t.Run(tc.name, func(t *testing.T) {
			us := &uploadServer{}
			srv := httptest.NewServer(us)
			defer srv.Close()
			c, _ := newTestClient(t, srv)
			_, err := c.UploadFile(context.Background(), Upload{Filename: "a.txt", Content: strings.NewReader(tc.data), Size: tc.size})
			if !errors.Is(err, ErrSizeMismatch) {
				t.Fatalf("err = %v, want ErrSizeMismatch", err)
			}
			srv.Close() // waits for the handler
			if us.complete.Load() != 0 {
				t.Error("the server received a complete form")
			}
		})
	}
}

func TestFileContentRange(t *testing.T) {
	data := []byte("0123456789")
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/api/v1/files/file-1/content" || r.URL.Query().Get("workspace_id") != "w1" {
			writeEnvelope(w, 404, "Resource not found", nil)
			return
		}
		w.Header().Set("Content-Disposition", `attachment; filename="a.txt"; filename*=UTF-8''%C3%A4.txt`)
		w.Header().Set("ETag", `"e1"`)
		w.Header().Set("Content-Type", "text/plain")
		http.ServeContent(w, r, "", time.Time{}, bytes.NewReader(data))
	}))
	defer srv.Close()
	c, _ := newTestClient(t, srv)
	ctx := context.Background()
	ct, err := c.FileContent(ctx, "file-1", &ByteRange{Start: 2, End: 5}, InWorkspace("w1"))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(ct)
	ct.Close()
	if string(b) != "2345" || !ct.Partial || ct.Start != 2 || ct.Total != 10 || ct.Length != 4 || ct.Filename != "ä.txt" || ct.ETag != `"e1"` {
		t.Errorf("range answer %q %+v", b, ct)
	}
	ct, err = c.FileContent(ctx, "file-1", nil, InWorkspace("w1"))
	if err != nil {
		t.Fatal(err)
	}
	b, _ = io.ReadAll(ct)
	ct.Close()
	if string(b) != string(data) || ct.Partial || ct.ContentType != "text/plain" {
		t.Errorf("whole answer %q %+v", b, ct)
	}
	_, err = c.FileContent(ctx, "file-1", &ByteRange{Start: 20, End: -1}, InWorkspace("w1"))
	var apiErr *Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != http.StatusRequestedRangeNotSatisfiable {
		t.Errorf("range outside the file: %v", err)
	}
}

func TestIterators(t *testing.T) {
	var requests atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		w.Header().Set("Content-Type", "application/json")
		q := r.URL.Query()
		switch r.URL.Path {
		case "/api/v1/workspaces":
			offset, _ := strconv.Atoi(q.Get("offset"))
			limit, _ := strconv.Atoi(q.Get("limit"))
			var items []string
			for i := offset; i < min(offset+limit, 5); i++ {
				items = append(items, fmt.Sprintf(`{"id":"w%d","created_at":"2026-11-23T12:00:00Z"}`, i))
			}
			fmt.Fprintf(w, `{"data":[%s],"total_count":5}`, strings.Join(items, ","))
		case "/api/v1/files":
			pages := map[string]string{
				"":   `{"_shape":"service","data":[{"id":"f1"},{"id":"f2"}],"has_more":true,"cursor":"c2"}`,
				"c2": `{"_shape":"service","data":[{"id":"f3"}],"has_more":false,"cursor":null}`,
			}
			_, _ = io.WriteString(w, pages[q.Get("cursor")])
		}
	}))
	defer srv.Close()
	c, _ := newTestClient(t, srv)
	ctx := context.Background()

	var ids []string
	for ws, err := range c.Workspaces(ctx, 2) {
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, ws.ID)
	}
	if strings.Join(ids, ",") != "w0,w1,w2,w3,w4" || requests.Load() != 3 {
		t.Errorf("workspaces %v in %d requests", ids, requests.Load())
	}
	requests.Store(0)
	for ws, err := range c.Workspaces(ctx, 2) {
		if err != nil || ws.ID == "w2" {
			break
		}
	}
	if requests.Load() != 2 {
		t.Errorf("a walk stopped at the third workspace made %d requests, want 2", requests.Load())
	}

	ids = nil
	for f, err := range c.Files(ctx) {
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, f.ID)
	}
	if strings.Join(ids, ",") != "f1,f2,f3" {
		t.Errorf("files %v", ids)
	}
}
