package client

import (
	"bytes"
	"context"
	"crypto/md5"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// uploadsGateway speaks the gateway's resumable upload routes as
// ../spec/uploads.md sets them: strict bodies, parts kept whole or not at
// all, the sum of parts bounded by the upload's bytes, completion in the
// order listed with an optional md5.
type uploadsGateway struct {
	mu       sync.Mutex
	uploads  map[string]*fakeUpload
	idem     map[string]string
	next     int
	creates  atomic.Int32
	cancels  atomic.Int32
	parts    atomic.Int32 // part requests received
	inflight atomic.Int32
	maxIn    atomic.Int32
	// overlap, when set, holds each part until two are in flight (or a
	// deadline passes), so that concurrency can be observed.
	overlap bool
	// refusePart, when set, decides an answer for part request n (from 1)
	// instead of storing it: a status and a Retry-After, or 0 to store.
	refusePart func(n int32) (int, string)
	// loseAnswer, when set, makes part request n be stored and its
	// connection closed before the answer.
	loseAnswer func(n int32) bool
	// completeMD5 is the md5 the last completion carried.
	completeMD5 string
	// onPart runs as a part request arrives, before it is read.
	onPart func(n int32)
}

type fakeUpload struct {
	id, filename, purpose string
	bytes                 int64
	status                UploadStatus
	parts                 []fakePart
	file                  []byte
	workspace             string
}

type fakePart struct {
	id   string
	data []byte
}

func newUploadsGateway() *uploadsGateway {
	return &uploadsGateway{uploads: map[string]*fakeUpload{}, idem: map[string]string{}}
}

func (g *uploadsGateway) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /api/v1/uploads", g.create)
	mux.HandleFunc("GET /api/v1/uploads/{id}", g.get)
	mux.HandleFunc("POST /api/v1/uploads/{id}/parts", g.part)
	mux.HandleFunc("POST /api/v1/uploads/{id}/complete", g.complete)
	mux.HandleFunc("POST /api/v1/uploads/{id}/cancel", g.cancel)
	mux.ServeHTTP(w, r)
}

func (g *uploadsGateway) upload(w http.ResponseWriter, r *http.Request) *fakeUpload {
	u := g.uploads[r.PathValue("id")]
	if u == nil || u.workspace != r.URL.Query().Get("workspace_id") {
		writeEnvelope(w, 404, "Upload not found", nil)
		return nil
	}
	return u
}

func (g *uploadsGateway) view(u *fakeUpload, withParts bool) map[string]any {
	v := map[string]any{
		"id": u.id, "object": "upload", "bytes": u.bytes, "created_at": 1764288000, "expires_at": 1764291600,
		"filename": u.filename, "purpose": u.purpose, "status": u.status, "file": nil,
	}
	if u.file != nil {
		v["file"] = map[string]any{"_shape": "service", "id": "file-" + u.id, "type": "file", "filename": u.filename,
			"mime_type": "text/plain", "size_bytes": len(u.file), "downloadable": false, "created_at": "2026-11-28T00:00:00Z"}
	}
	if withParts {
		parts := []map[string]any{}
		for _, p := range u.parts {
			parts = append(parts, map[string]any{"id": p.id, "bytes": len(p.data), "created_at": 1764288000})
		}
		v["parts"] = parts
	}
	return v
}

func answer(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}

func (g *uploadsGateway) create(w http.ResponseWriter, r *http.Request) {
	g.creates.Add(1)
	var req struct {
		Bytes    *int64  `json:"bytes"`
		Filename *string `json:"filename"`
		MimeType *string `json:"mime_type"`
		Purpose  *string `json:"purpose"`
	}
	dec := json.NewDecoder(r.Body)
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil || req.Bytes == nil || req.Filename == nil || req.MimeType == nil ||
		req.Purpose == nil || *req.Bytes < 1 || *req.Filename == "" || *req.Purpose == "" {
		writeEnvelope(w, 400, "Invalid request parameters", nil)
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	key := r.Header.Get("Idempotency-Key")
	if id, ok := g.idem[key]; ok && key != "" {
		answer(w, g.view(g.uploads[id], false))
		return
	}
	g.next++
	u := &fakeUpload{id: fmt.Sprintf("upload_%d", g.next), filename: *req.Filename, purpose: *req.Purpose,
		bytes: *req.Bytes, status: UploadPending, workspace: r.URL.Query().Get("workspace_id")}
	g.uploads[u.id] = u
	if key != "" {
		g.idem[key] = u.id
	}
	answer(w, g.view(u, false))
}

func (g *uploadsGateway) get(w http.ResponseWriter, r *http.Request) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if u := g.upload(w, r); u != nil {
		answer(w, g.view(u, true))
	}
}

func (g *uploadsGateway) part(w http.ResponseWriter, r *http.Request) {
	n := g.parts.Add(1)
	in := g.inflight.Add(1)
	defer g.inflight.Add(-1)
	for {
		m := g.maxIn.Load()
		if in <= m || g.maxIn.CompareAndSwap(m, in) {
			break
		}
	}
	if g.onPart != nil {
		g.onPart(n)
	}
	if g.overlap {
		deadline := time.Now().Add(5 * time.Second)
		for g.maxIn.Load() < 2 && time.Now().Before(deadline) {
			time.Sleep(time.Millisecond) // polls a condition with a deadline
		}
	}
	if g.refusePart != nil {
		if status, retryAfter := g.refusePart(n); status != 0 {
			_, _ = io.Copy(io.Discard, r.Body)
			if retryAfter != "" {
				w.Header().Set("Retry-After", retryAfter)
			}
			writeEnvelope(w, status, http.StatusText(status), nil)
			return
		}
	}
	_, params, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if err != nil {
		writeEnvelope(w, 400, "Invalid request parameters", nil)
		return
	}
	mr := multipart.NewReader(r.Body, params["boundary"])
	var data []byte
	for {
		p, err := mr.NextPart()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return // cut off: nothing kept
		}
		b, err := io.ReadAll(io.LimitReader(p, MaxPartSize+1))
		if err != nil {
			return
		}
		if p.FormName() == "data" {
			data = b
		}
	}
	if len(data) == 0 || int64(len(data)) > MaxPartSize {
		writeEnvelope(w, 400, "Invalid request parameters", map[string]any{"fields": map[string]any{"data": "size"}})
		return
	}
	g.mu.Lock()
	u := g.upload(w, r)
	if u == nil {
		g.mu.Unlock()
		return
	}
	if u.status != UploadPending {
		g.mu.Unlock()
		writeEnvelope(w, 400, "upload is "+string(u.status), nil)
		return
	}
	stored := int64(0)
	for _, p := range u.parts {
		stored += int64(len(p.data))
	}
	if stored+int64(len(data)) > u.bytes {
		g.mu.Unlock()
		writeEnvelope(w, 400, "the parts would pass the upload's bytes", nil)
		return
	}
	g.next++
	p := fakePart{id: fmt.Sprintf("part_%d", g.next), data: data}
	u.parts = append(u.parts, p)
	g.mu.Unlock()
	if g.loseAnswer != nil && g.loseAnswer(n) {
		conn, _, err := http.NewResponseController(w).Hijack()
		if err == nil {
			conn.Close()
		}
		return
	}
	answer(w, map[string]any{"id": p.id, "object": "upload.part", "created_at": 1764288000, "upload_id": u.id})
}

func (g *uploadsGateway) complete(w http.ResponseWriter, r *http.Request) {
	var req struct {
		PartIDs []string `json:"part_ids"`
		MD5     *string  `json:"md5"`
	}
	dec := json.NewDecoder(r.Body)
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		writeEnvelope(w, 400, "Invalid request parameters", nil)
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	u := g.upload(w, r)
	if u == nil {
		return
	}
	if u.status != UploadPending {
		writeEnvelope(w, 400, "upload is "+string(u.status), nil)
		return
	}
	byID := map[string][]byte{}
	for _, p := range u.parts {
		byID[p.id] = p.data
	}
	var file []byte
	seen := map[string]bool{}
	for _, id := range req.PartIDs {
		d, ok := byID[id]
		if !ok || seen[id] {
			writeEnvelope(w, 400, "Invalid request parameters", map[string]any{"fields": map[string]any{"part_ids": id}})
			return
		}
		seen[id] = true
		file = append(file, d...)
	}
	if int64(len(file)) != u.bytes {
		writeEnvelope(w, 400, "Invalid request parameters", map[string]any{"fields": map[string]any{"part_ids": "sum"}})
		return
	}
	if req.MD5 != nil {
		g.completeMD5 = *req.MD5
		sum := md5.Sum(file)
		if *req.MD5 != hex.EncodeToString(sum[:]) {
			writeEnvelope(w, 400, "Invalid request parameters", map[string]any{"fields": map[string]any{"md5": "mismatch"}})
			return
		}
	}
	u.status, u.file, u.parts = UploadCompleted, file, nil
	answer(w, g.view(u, false))
}

func (g *uploadsGateway) cancel(w http.ResponseWriter, r *http.Request) {
	g.cancels.Add(1)
	g.mu.Lock()
	defer g.mu.Unlock()
	u := g.upload(w, r)
	if u == nil {
		return
	}
	if u.status == UploadCompleted {
		writeEnvelope(w, 400, "upload is completed", nil)
		return
	}
	u.status, u.parts = UploadCancelled, nil
	answer(w, g.view(u, false))
}

// only returns the single upload made, and its state.
func (g *uploadsGateway) only(t *testing.T) fakeUpload {
	t.Helper()
	g.mu.Lock()
	defer g.mu.Unlock()
	if len(g.uploads) != 1 {
		t.Fatalf("%d uploads made, want 1", len(g.uploads))
	}
	for _, u := range g.uploads {
		return *u
	}
	panic("unreachable")
}

// testBytes is n bytes that differ from part to part, so a misplaced part
// shows.
func testBytes(n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i*7 + i/1000)
	}
	return b
}

// plainReader hides a reader's ReadAt.
type plainReader struct{ r io.Reader }

func (p *plainReader) Read(b []byte) (int, error) { return p.r.Read(b) }

func startUploads(t *testing.T, g *uploadsGateway, opts ...Option) *Client {
	t.Helper()
	srv := httptest.NewServer(g)
	t.Cleanup(srv.Close)
	c, _ := newTestClient(t, srv, opts...)
	return c
}

func TestUploadLargeSendsPartsConcurrently(t *testing.T) {
	for _, tc := range []struct {
		name  string
		plain bool
	}{{"ReaderAt", false}, {"plain reader", true}} {
		t.Run(tc.name, func(t *testing.T) {
			g := newUploadsGateway()
			g.overlap = true
			c := startUploads(t, g)
			data := testBytes(10*1024 + 123)
			var r io.Reader = bytes.NewReader(data)
			if tc.plain {
				r = &plainReader{r}
			}
			f, err := c.UploadLarge(context.Background(), r, int64(len(data)),
				LargeUpload{Filename: "big.txt", PartSize: 1024, Concurrency: 4}, InWorkspace("ws-1"))
			if err != nil {
				t.Fatal(err)
			}
			u := g.only(t)
			if !bytes.Equal(u.file, data) {
				t.Fatalf("assembled %d bytes, not the %d sent in order", len(u.file), len(data))
			}
			if f.ID != "file-"+u.id || f.SizeBytes != int64(len(data)) || f.Filename != "big.txt" {
				t.Errorf("file %+v", f)
			}
			if g.maxIn.Load() < 2 {
				t.Errorf("at most %d part in flight, want at least 2", g.maxIn.Load())
			}
			if g.maxIn.Load() > 4 {
				t.Errorf("%d parts in flight, more than Concurrency 4", g.maxIn.Load())
			}
			if g.parts.Load() != 11 || g.cancels.Load() != 0 {
				t.Errorf("%d part requests and %d cancels, want 11 and 0", g.parts.Load(), g.cancels.Load())
			}
			if u.purpose != "user_data" {
				t.Errorf("purpose %q, want user_data by default", u.purpose)
			}
		})
	}
}

func TestUploadLargeResendsFailedPart(t *testing.T) {
	for _, tc := range []struct {
		name       string
		status     int
		retryAfter string
		plain      bool
	}{
		{"503 ReaderAt", 503, "", false},
		{"503 plain reader", 503, "", true},
		{"429 Retry-After", 429, "2", true},
		{"502", 502, "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := newUploadsGateway()
			g.refusePart = func(n int32) (int, string) {
				if n == 2 {
					return tc.status, tc.retryAfter
				}
				return 0, ""
			}
			srv := httptest.NewServer(g)
			defer srv.Close()
			c, waits := newTestClient(t, srv)
			data := testBytes(5000)
			var r io.Reader = bytes.NewReader(data)
			if tc.plain {
				r = &plainReader{r}
			}
			if _, err := c.UploadLarge(context.Background(), r, int64(len(data)), LargeUpload{Filename: "a.txt", PartSize: 1000, Concurrency: 2}); err != nil {
				t.Fatal(err)
			}
			if u := g.only(t); !bytes.Equal(u.file, data) {
				t.Fatal("assembled file differs from the bytes sent")
			}
			if g.parts.Load() != 6 || len(*waits) != 1 {
				t.Errorf("%d part requests after %d waits, want 6 (5 parts, one sent again) after 1", g.parts.Load(), len(*waits))
			}
			if tc.retryAfter != "" && (*waits)[0] < 2*time.Second {
				t.Errorf("waited %v, want at least Retry-After 2s", (*waits)[0])
			}
		})
	}
}

// A part stored as its connection dropped is found in the upload's list
// and taken for the part, not sent again (which would store its range
// twice and leave the upload impossible to complete).
func TestUploadLargeRecoversPartWhoseAnswerWasLost(t *testing.T) {
	g := newUploadsGateway()
	g.loseAnswer = func(n int32) bool { return n == 3 }
	c := startUploads(t, g)
	data := testBytes(4500)
	if _, err := c.UploadLarge(context.Background(), bytes.NewReader(data), int64(len(data)), LargeUpload{Filename: "a.txt", PartSize: 1000, Concurrency: 3}); err != nil {
		t.Fatal(err)
	}
	if u := g.only(t); !bytes.Equal(u.file, data) {
		t.Fatal("assembled file differs from the bytes sent")
	}
	if g.parts.Load() != 5 {
		t.Errorf("%d part requests, want 5 (the part whose answer was lost is not sent again)", g.parts.Load())
	}
}

// Two parts of one size stored as their answers were lost cannot be told
// apart: the upload, which they would keep from completing, is cancelled.
func TestUploadLargeCancelsWhenLostPartsAreAmbiguous(t *testing.T) {
	g := newUploadsGateway()
	g.overlap = true
	g.loseAnswer = func(n int32) bool { return n <= 2 }
	c := startUploads(t, g)
	data := testBytes(4000)
	_, err := c.UploadLarge(context.Background(), bytes.NewReader(data), int64(len(data)), LargeUpload{Filename: "a.txt", PartSize: 1000, Concurrency: 2})
	if !errors.Is(err, ErrUnknownParts) {
		t.Fatalf("err = %v, want ErrUnknownParts", err)
	}
	if u := g.only(t); u.status != UploadCancelled {
		t.Errorf("upload %s, want cancelled", u.status)
	}
	if g.parts.Load() != 2 {
		t.Errorf("%d part requests, want the 2 lost ones and none after", g.parts.Load())
	}
}

// A refusal at completion (here the md5 of what the gateway assembled)
// cancels the upload.
func TestUploadLargeCancelsWhenCompletionIsRefused(t *testing.T) {
	g := newUploadsGateway()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/complete") {
			// The gateway assembled other bytes than those read here.
			writeEnvelope(w, 400, "Invalid request parameters", map[string]any{"fields": map[string]any{"md5": "does not match"}})
			return
		}
		g.ServeHTTP(w, r)
	}))
	defer srv.Close()
	c, _ := newTestClient(t, srv)
	data := testBytes(2500)
	_, err := c.UploadLarge(context.Background(), bytes.NewReader(data), int64(len(data)), LargeUpload{Filename: "a.txt", PartSize: 1000, MD5: true})
	var apiErr *Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != 400 {
		t.Fatalf("err = %v, want the 400 *Error", err)
	}
	if u := g.only(t); u.status != UploadCancelled {
		t.Errorf("upload %s, want cancelled", u.status)
	}
}

func TestResumeUploadSendsOnlyMissingParts(t *testing.T) {
	g := newUploadsGateway()
	// The gateway stores three parts, then answers 503 until it recovers.
	var down atomic.Bool
	down.Store(true)
	g.refusePart = func(n int32) (int, string) {
		if n > 3 && down.Load() {
			return 503, "1"
		}
		return 0, ""
	}
	c := startUploads(t, g, WithRetry(Retry{MaxAttempts: 2, MaxWait: time.Minute}))
	data := testBytes(7*1000 + 1)
	var saved []byte
	var calls atomic.Int32
	lu := LargeUpload{Filename: "a.txt", PartSize: 1000, Concurrency: 2, MD5: true, OnProgress: func(p UploadProgress) {
		calls.Add(1)
		saved, _ = json.Marshal(p) // what a caller would persist
	}}
	_, err := c.UploadLarge(context.Background(), bytes.NewReader(data), int64(len(data)), lu, InWorkspace("ws-1"))
	var inc *IncompleteUploadError
	if !errors.As(err, &inc) {
		t.Fatalf("err = %v, want *IncompleteUploadError", err)
	}
	var apiErr *Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != 503 {
		t.Fatalf("err = %v, want it to wrap the 503", err)
	}
	if u := g.only(t); u.status != UploadPending || len(u.parts) != 3 || g.cancels.Load() != 0 {
		t.Fatalf("upload %s with %d parts and %d cancels, want pending with 3 and none", u.status, len(u.parts), g.cancels.Load())
	}
	if calls.Load() != 3 {
		t.Errorf("OnProgress called %d times, want once per stored part (3)", calls.Load())
	}
	var p UploadProgress
	if err := json.Unmarshal(saved, &p); err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(p) != fmt.Sprint(inc.Progress) {
		t.Errorf("last progress %v, error's %v", p, inc.Progress)
	}

	down.Store(false)
	before := g.parts.Load()
	f, err := c.ResumeUpload(context.Background(), p, bytes.NewReader(data), lu, InWorkspace("ws-1"))
	if err != nil {
		t.Fatal(err)
	}
	if sent := g.parts.Load() - before; sent != 5 {
		t.Errorf("resuming sent %d parts, want the 5 missing of 8", sent)
	}
	u := g.only(t)
	if !bytes.Equal(u.file, data) || f.SizeBytes != int64(len(data)) {
		t.Fatal("resumed file differs from the bytes sent")
	}
	sum := md5.Sum(data)
	if g.completeMD5 != hex.EncodeToString(sum[:]) {
		t.Errorf("md5 sent %q, want the whole file's", g.completeMD5)
	}

	// Resuming a completed upload answers its file and sends nothing.
	before = g.parts.Load()
	if f2, err := c.ResumeUpload(context.Background(), p, bytes.NewReader(data), lu, InWorkspace("ws-1")); err != nil || f2.ID != f.ID {
		t.Errorf("resuming a completed upload: %v, %v", f2, err)
	}
	if g.parts.Load() != before {
		t.Error("resuming a completed upload sent parts")
	}
}

func TestResumeUploadRefusesWhatItCannotResume(t *testing.T) {
	g := newUploadsGateway()
	c := startUploads(t, g)
	ctx := context.Background()
	data := testBytes(3000)
	up, err := c.postUpload(ctx, "/uploads", nil, nil, map[string]any{"bytes": 3000, "filename": "a.txt", "mime_type": "text/plain", "purpose": "user_data"}, false)
	if err != nil {
		t.Fatal(err)
	}
	p := UploadProgress{UploadID: up.ID, Size: 3000, PartSize: 1000, PartIDs: make([]string, 3)}

	// A part stored that the progress does not name.
	g.mu.Lock()
	g.uploads[up.ID].parts = []fakePart{{id: "part_x", data: data[:1000]}}
	g.mu.Unlock()
	if _, err := c.ResumeUpload(ctx, p, bytes.NewReader(data), LargeUpload{}); !errors.Is(err, ErrUnknownParts) {
		t.Fatalf("err = %v, want ErrUnknownParts", err)
	}
	if g.only(t).status != UploadCancelled {
		t.Error("an upload that cannot be completed is not cancelled")
	}
	_, err = c.ResumeUpload(ctx, p, bytes.NewReader(data), LargeUpload{})
	var stateErr *UploadStateError
	if !errors.As(err, &stateErr) || stateErr.Status != UploadCancelled {
		t.Errorf("resuming a cancelled upload: %v, want *UploadStateError cancelled", err)
	}
	bad := p
	bad.PartIDs = bad.PartIDs[:2]
	if _, err := c.ResumeUpload(ctx, bad, bytes.NewReader(data), LargeUpload{}); err == nil {
		t.Error("a progress whose parts do not cover its size is accepted")
	}
}

func TestUploadLargeCancelsOnFatalError(t *testing.T) {
	t.Run("refused part", func(t *testing.T) {
		g := newUploadsGateway()
		g.refusePart = func(n int32) (int, string) {
			if n == 2 {
				return 413, ""
			}
			return 0, ""
		}
		c := startUploads(t, g)
		data := testBytes(5000)
		_, err := c.UploadLarge(context.Background(), &plainReader{bytes.NewReader(data)}, int64(len(data)), LargeUpload{Filename: "a.txt", PartSize: 1000, Concurrency: 2})
		var apiErr *Error
		if !errors.As(err, &apiErr) || apiErr.StatusCode != 413 {
			t.Fatalf("err = %v, want the 413 *Error", err)
		}
		if u := g.only(t); u.status != UploadCancelled || g.cancels.Load() != 1 {
			t.Errorf("upload %s after %d cancels, want cancelled once", u.status, g.cancels.Load())
		}
		if g.parts.Load() > 5 {
			t.Errorf("%d part requests, the refusal was retried", g.parts.Load())
		}
	})
	t.Run("context cancelled", func(t *testing.T) {
		g := newUploadsGateway()
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		g.onPart = func(n int32) {
			if n == 3 {
				cancel()
			}
		}
		c := startUploads(t, g)
		data := testBytes(20000)
		_, err := c.UploadLarge(ctx, bytes.NewReader(data), int64(len(data)), LargeUpload{Filename: "a.txt", PartSize: 1000, Concurrency: 2})
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("err = %v, want context.Canceled", err)
		}
		if u := g.only(t); u.status != UploadCancelled {
			t.Errorf("upload %s, want cancelled", u.status)
		}
	})
	t.Run("reader shorter than size", func(t *testing.T) {
		for _, plain := range []bool{true, false} {
			g := newUploadsGateway()
			c := startUploads(t, g)
			data := testBytes(2500)
			var r io.Reader = bytes.NewReader(data)
			if plain {
				r = &plainReader{r}
			}
			_, err := c.UploadLarge(context.Background(), r, 3000, LargeUpload{Filename: "a.txt", PartSize: 1000})
			if !errors.Is(err, ErrSizeMismatch) {
				t.Fatalf("plain %v: err = %v, want ErrSizeMismatch", plain, err)
			}
			if u := g.only(t); u.status != UploadCancelled {
				t.Errorf("plain %v: upload %s, want cancelled", plain, u.status)
			}
		}
	})
	t.Run("reader longer than size", func(t *testing.T) {
		g := newUploadsGateway()
		c := startUploads(t, g)
		data := testBytes(2500)
		_, err := c.UploadLarge(context.Background(), &plainReader{bytes.NewReader(data)}, 2000, LargeUpload{Filename: "a.txt", PartSize: 1000})
		if !errors.Is(err, ErrSizeMismatch) || g.only(t).status != UploadCancelled {
			t.Fatalf("err = %v, status %s: want ErrSizeMismatch and the upload cancelled", err, g.only(t).status)
		}
	})
}

// A plain reader is read into Concurrency buffers, reused part after part:
// memory stays PartSize × Concurrency however large the file.
func TestUploadLargeBoundsMemoryOfPlainReader(t *testing.T) {
	var allocs atomic.Int32
	orig := allocPartBuffer
	allocPartBuffer = func(n int64) []byte {
		allocs.Add(1)
		return orig(n)
	}
	defer func() { allocPartBuffer = orig }()
	g := newUploadsGateway()
	c := startUploads(t, g)
	data := testBytes(64*1000 + 1)
	if _, err := c.UploadLarge(context.Background(), &plainReader{bytes.NewReader(data)}, int64(len(data)), LargeUpload{Filename: "a.txt", PartSize: 1000, Concurrency: 3}); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(g.only(t).file, data) {
		t.Fatal("assembled file differs from the bytes sent")
	}
	if n := allocs.Load(); n < 1 || n > 3 {
		t.Errorf("%d part buffers made for 65 parts, want at most Concurrency (3)", n)
	}
}

func TestUploadLargeMD5(t *testing.T) {
	for _, tc := range []struct {
		name  string
		md5   bool
		plain bool
	}{{"off", false, false}, {"ReaderAt", true, false}, {"plain reader", true, true}} {
		t.Run(tc.name, func(t *testing.T) {
			g := newUploadsGateway()
			c := startUploads(t, g)
			data := testBytes(9999)
			var r io.Reader = bytes.NewReader(data)
			if tc.plain {
				r = &plainReader{r}
			}
			if _, err := c.UploadLarge(context.Background(), r, int64(len(data)), LargeUpload{Filename: "a.txt", PartSize: 1000, MD5: tc.md5}); err != nil {
				t.Fatal(err)
			}
			want := ""
			if tc.md5 {
				sum := md5.Sum(data)
				want = hex.EncodeToString(sum[:])
			}
			if g.completeMD5 != want {
				t.Errorf("md5 sent %q, want %q", g.completeMD5, want)
			}
		})
	}
}

func TestUploadLargeCreatesOnceAcrossRetries(t *testing.T) {
	g := newUploadsGateway()
	var refused atomic.Bool
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// The first creation is made, and its answer replaced by a 503.
		if r.URL.Path == "/api/v1/uploads" && refused.CompareAndSwap(false, true) {
			g.create(httptest.NewRecorder(), r)
			writeEnvelope(w, 503, "Service Unavailable", nil)
			return
		}
		g.ServeHTTP(w, r)
	}))
	defer srv.Close()
	c, _ := newTestClient(t, srv)
	data := testBytes(1500)
	if _, err := c.UploadLarge(context.Background(), bytes.NewReader(data), int64(len(data)), LargeUpload{Filename: "a.txt", PartSize: 1000}); err != nil {
		t.Fatal(err)
	}
	if g.creates.Load() != 2 || !bytes.Equal(g.only(t).file, data) {
		t.Errorf("%d creations, want 2 making one upload", g.creates.Load())
	}
}

func TestUploadLargeRefusesBadArguments(t *testing.T) {
	g := newUploadsGateway()
	c := startUploads(t, g)
	for _, tc := range []struct {
		size, part int64
	}{{0, 0}, {10, MaxPartSize + 1}, {MaxUploadParts + 1, 1}} {
		if _, err := c.UploadLarge(context.Background(), strings.NewReader("x"), tc.size, LargeUpload{Filename: "a", PartSize: tc.part}); err == nil {
			t.Errorf("size %d, part %d: accepted", tc.size, tc.part)
		}
	}
	if g.creates.Load() != 0 {
		t.Error("an upload was created for bad arguments")
	}
}

// discardGateway answers uploads whole and in parts as the gateway does,
// reading every byte and keeping none, so a benchmark measures the client
// and the connection.
func discardGateway() http.Handler {
	var next atomic.Int64
	readForm := func(r *http.Request) (int64, error) {
		mr, err := r.MultipartReader()
		if err != nil {
			return 0, err
		}
		var n int64
		for {
			p, err := mr.NextPart()
			if errors.Is(err, io.EOF) {
				return n, nil
			}
			if err != nil {
				return 0, err
			}
			m, err := io.Copy(io.Discard, p)
			if err != nil {
				return 0, err
			}
			n += m
		}
	}
	file := func(n int64) map[string]any {
		return map[string]any{"_shape": "service", "id": "file-1", "type": "file", "filename": "b.bin",
			"mime_type": "application/octet-stream", "size_bytes": n, "downloadable": false, "created_at": "2026-11-28T00:00:00Z"}
	}
	var size atomic.Int64
	mux := http.NewServeMux()
	mux.HandleFunc("POST /api/v1/files", func(w http.ResponseWriter, r *http.Request) {
		n, err := readForm(r)
		if err != nil {
			writeEnvelope(w, 400, "Invalid request parameters", nil)
			return
		}
		answer(w, file(n))
	})
	mux.HandleFunc("POST /api/v1/uploads", func(w http.ResponseWriter, r *http.Request) {
		var req struct{ Bytes int64 }
		_ = json.NewDecoder(r.Body).Decode(&req)
		size.Store(req.Bytes)
		answer(w, map[string]any{"id": "upload_1", "object": "upload", "bytes": req.Bytes, "status": "pending", "file": nil})
	})
	mux.HandleFunc("POST /api/v1/uploads/upload_1/parts", func(w http.ResponseWriter, r *http.Request) {
		if _, err := readForm(r); err != nil {
			writeEnvelope(w, 400, "Invalid request parameters", nil)
			return
		}
		answer(w, map[string]any{"id": fmt.Sprintf("part_%d", next.Add(1)), "object": "upload.part", "upload_id": "upload_1"})
	})
	mux.HandleFunc("POST /api/v1/uploads/upload_1/complete", func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		answer(w, map[string]any{"id": "upload_1", "object": "upload", "status": "completed", "file": file(size.Load())})
	})
	return mux
}

// BenchmarkUploadLarge sends 64 MiB over loopback: whole in one request
// (UploadFile, the baseline) and in 8 MiB parts, 4 at once, from a
// ReaderAt and from a plain reader. Compare MB/s within one run; B/op
// shows the plain reader's buffers (4 × 8 MiB) against the ReaderAt's
// copy buffers.
func BenchmarkUploadLarge(b *testing.B) {
	srv := httptest.NewServer(discardGateway())
	defer srv.Close()
	c, err := New(srv.URL, "sk-test")
	if err != nil {
		b.Fatal(err)
	}
	data := testBytes(64 << 20)
	lu := LargeUpload{Filename: "b.bin", PartSize: 8 << 20, Concurrency: 4}
	for _, bc := range []struct {
		name string
		run  func() (*File, error)
	}{
		{"UploadFile", func() (*File, error) {
			return c.UploadFile(context.Background(), Upload{Filename: "b.bin", Content: bytes.NewReader(data), Size: int64(len(data))})
		}},
		{"ReaderAt", func() (*File, error) {
			return c.UploadLarge(context.Background(), bytes.NewReader(data), int64(len(data)), lu)
		}},
		{"plain", func() (*File, error) {
			return c.UploadLarge(context.Background(), &plainReader{bytes.NewReader(data)}, int64(len(data)), lu)
		}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.SetBytes(int64(len(data)))
			b.ReportAllocs()
			for b.Loop() {
				f, err := bc.run()
				if err != nil {
					b.Fatal(err)
				}
				if f.SizeBytes != int64(len(data)) {
					b.Fatalf("the server read %d bytes of %d", f.SizeBytes, len(data))
				}
			}
		})
	}
}
