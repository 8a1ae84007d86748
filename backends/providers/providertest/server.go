// Package providertest provides local stand-ins for the OpenAI and Anthropic
// Files APIs, for tests of anything that uploads with a workspace's own
// provider key. Each stand-in speaks its provider's wire protocol (paths,
// auth and protocol headers, multipart fields, paging parameters, JSON
// answers and error bodies, request-id headers), streams uploads and
// downloads without buffering them (uploaded content is kept in a temporary
// file), records what it received, refuses what the provider would (a body
// where none is due, unknown query parameters, downloads the provider does
// not serve), and has knobs to fail, throttle, hang or redirect.
//
// NewOpenAIInMemory and NewAnthropicInMemory start the same stand-ins
// without a network listener, reached through Server.Dial only, for tests
// run in a testing/synctest bubble: a call's timeout is then waited out on
// the bubble's clock, at once, rather than on the wall's.
//
// The stand-ins are written from the providers' public API references and
// deliberately share no code or constants with package providers, so a
// mistake there is not mirrored here.
package providertest

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"io"
	"mime"
	"net"
	"net/http"
	"net/http/httptest"
	"net/textproto"
	"net/url"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// Keys the stand-ins accept unless Server.Key is changed before use.
const (
	OpenAIKey    = "sk-test-openai-4f0c9a7e2b1d"
	AnthropicKey = "sk-ant-test-8e3b5d1f6a2c"
)

// StoredFile is a file a stand-in holds: uploaded, or put there with Seed.
// Compare SHA256 and Size with what was sent; the content itself can be
// downloaded when Downloadable.
type StoredFile struct {
	ID          string
	Filename    string
	ContentType string // of the file part, as sent
	Purpose     string // OpenAI only
	Size        int64
	SHA256      string // hex of the content; empty for seeded files
	CreatedAt   time.Time
	RequestID   string // of the upload; empty for seeded files
	// Downloadable is whether the provider serves the content: OpenAI
	// refuses purposes assistants and user_data (so every upload through
	// byok), Anthropic every uploaded file.
	Downloadable bool
}

// Request is one request a stand-in finished handling.
type Request struct {
	Method           string
	Path             string
	Query            url.Values  // the query string, parsed
	Header           http.Header // as received, auth headers included
	ContentLength    int64       // -1 when not declared (chunked)
	TransferEncoding []string
	// Fields are the non-file form fields of an upload.
	Fields map[string]string
	// FileParts counts parts named "file"; Filename and ContentType are
	// those of the first.
	FileParts   int
	Filename    string
	ContentType string
	// BodyBytes counts the file part's bytes received, complete or not.
	BodyBytes int64
	// Complete reports whether an upload's multipart body was read to its
	// closing boundary; false when the client aborted mid-body.
	Complete bool
	// Status is what the stand-in answered; 0 when it never answered (Hang)
	// or the client was gone.
	Status    int
	RequestID string
	// FileID is the stored, described, downloaded or deleted file, if any.
	FileID string
	// SentBytes counts the content bytes a download wrote before it ended.
	SentBytes int64
}

// Server is a running stand-in. Its methods are safe for concurrent use.
type Server struct {
	// BaseURL is the value for providers.<name>.base_url: with /v1 for
	// OpenAI, without for Anthropic, as the real defaults.
	BaseURL string
	// Key is the API key accepted; others get the provider's 401. Set it
	// before the first request if the default does not suit.
	Key string

	dialect dialect
	srv     *httptest.Server
	pipes   *pipeListener // the in-memory listener; nil for a network one
	release chan struct{}
	dir     string // uploaded contents

	mu       sync.Mutex
	files    map[string]StoredFile
	contents map[string]source
	order    []string
	uploads  map[string]*uploadState // OpenAI's Uploads resource
	requests []Request
	changed  chan struct{} // closed and replaced when requests grows
	knobs    knobs
	conns    int // connections accepted
	// forget: finished requests are not kept (DiscardRequests).
	forget bool
}

type knobs struct {
	uploadStatus int    // answer uploads with this error status
	deleteStatus int    // answer deletes with this error status
	hang         bool   // read uploads, never answer
	redirectTo   string // answer uploads with 307 to this URL
	// The same for reads: list, metadata, content.
	readStatus     int
	hangReads      bool
	redirectReads  string
	retryAfter     string // Retry-After of 429 answers
	uploadsStatus  int    // answer the Uploads resource with this error status
	stallAfter     int64  // downloads stop after this many bytes (-1: never)
	stallDownloads bool
	discardUploads bool // parse uploads as they arrive, keep none of their bytes
}

// NewOpenAI starts an OpenAI Files API stand-in, closed when the test ends.
//
//	POST   /v1/files              multipart: purpose, file; Authorization: Bearer
//	GET    /v1/files              ?after=&limit=(1-10000, default 10000)&order=asc|desc&purpose=
//	GET    /v1/files/{id}
//	GET    /v1/files/{id}/content
//	DELETE /v1/files/{id}
//
// and OpenAI's Uploads resource (see Server.Upload):
//
//	POST   /v1/uploads                 JSON: bytes, filename, mime_type, purpose
//	POST   /v1/uploads/{id}/parts      multipart: data, at most 64 MB
//	POST   /v1/uploads/{id}/complete   JSON: part_ids, md5?
//	POST   /v1/uploads/{id}/cancel
func NewOpenAI(t testing.TB) *Server { return start(t, openAI{}, OpenAIKey, "/v1", false) }

// NewAnthropic starts an Anthropic Files API stand-in, closed when the test
// ends.
//
//	POST   /v1/files              multipart: file; x-api-key, anthropic-version,
//	                              anthropic-beta: files-api-2025-04-14
//	GET    /v1/files              ?after_id=|before_id=&limit=(1-1000, default 20), newest first
//	GET    /v1/files/{id}
//	GET    /v1/files/{id}/content
//	DELETE /v1/files/{id}
func NewAnthropic(t testing.TB) *Server { return start(t, anthropic{}, AnthropicKey, "", false) }

// NewOpenAIInMemory starts the stand-in NewOpenAI does, listening on no
// socket: a client reaches it only with Server.Dial as its dialer (an
// http.Transport's DialContext), over in-memory connections. Every
// goroutine it starts blocks on channels only, so it can run inside a
// testing/synctest bubble: start it, and the client, from within one.
func NewOpenAIInMemory(t testing.TB) *Server { return start(t, openAI{}, OpenAIKey, "/v1", true) }

// NewAnthropicInMemory is NewOpenAIInMemory's Anthropic stand-in.
func NewAnthropicInMemory(t testing.TB) *Server {
	return start(t, anthropic{}, AnthropicKey, "", true)
}

func start(t testing.TB, d dialect, key, basePath string, inMemory bool) *Server {
	t.Helper()
	s := &Server{
		Key:      key,
		dialect:  d,
		release:  make(chan struct{}),
		dir:      t.TempDir(),
		files:    map[string]StoredFile{},
		contents: map[string]source{},
		uploads:  map[string]*uploadState{},
		changed:  make(chan struct{}),
		knobs:    knobs{stallAfter: -1},
	}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/files", s.upload)
	mux.HandleFunc("GET /v1/files", s.list)
	mux.HandleFunc("GET /v1/files/{id}", s.stat)
	mux.HandleFunc("GET /v1/files/{id}/content", s.content)
	mux.HandleFunc("DELETE /v1/files/{id}", s.delete)
	if _, ok := d.(openAI); ok {
		s.routeUploads(mux)
	}
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		rec := s.begin(r)
		drain(r)
		s.fail(w, &rec, http.StatusNotFound, "not_found_error", "Unknown route "+r.Method+" "+r.URL.Path)
		s.finish(rec)
	})
	s.srv = httptest.NewUnstartedServer(mux)
	if inMemory {
		s.srv.Listener.Close()
		s.pipes = newPipeListener()
		s.srv.Listener = s.pipes
	}
	s.srv.Config.ConnState = func(_ net.Conn, state http.ConnState) {
		if state == http.StateNew {
			s.mu.Lock()
			s.conns++
			s.mu.Unlock()
		}
	}
	s.srv.Start()
	s.BaseURL = s.srv.URL + basePath
	t.Cleanup(s.srv.Close)
	// Runs before Close (cleanups are last-in first-out): hung handlers
	// return, so Close does not wait for them.
	t.Cleanup(func() { close(s.release) })
	return s
}

// Dial connects to the stand-in, whatever the address asked: in memory
// for one made by NewOpenAIInMemory or NewAnthropicInMemory, over the
// network otherwise. It has the signature of an http.Transport's
// DialContext.
func (s *Server) Dial(ctx context.Context, _, _ string) (net.Conn, error) {
	if s.pipes != nil {
		return s.pipes.dial(ctx)
	}
	var d net.Dialer
	return d.DialContext(ctx, "tcp", s.srv.Listener.Addr().String())
}

// FailUploads makes later uploads answer status (>= 400) with the
// provider's error body, after reading the request; 0 restores success.
func (s *Server) FailUploads(status int) { s.setKnobs(func(k *knobs) { k.uploadStatus = status }) }

// FailDeletes makes later deletes answer status with the provider's error
// body; 0 restores success.
func (s *Server) FailDeletes(status int) { s.setKnobs(func(k *knobs) { k.deleteStatus = status }) }

// Hang makes later uploads, and calls of the Uploads resource, read the
// whole request and never answer, until the client gives up or the test
// ends.
func (s *Server) Hang() { s.setKnobs(func(k *knobs) { k.hang = true }) }

// RedirectTo makes later uploads answer 307 Temporary Redirect to url.
func (s *Server) RedirectTo(url string) { s.setKnobs(func(k *knobs) { k.redirectTo = url }) }

// FailReads makes later lists, metadata requests and downloads answer
// status with the provider's error body; 0 restores success.
func (s *Server) FailReads(status int) { s.setKnobs(func(k *knobs) { k.readStatus = status }) }

// RetryAfter makes later 429 answers carry Retry-After: v (seconds or an
// HTTP date); "" sends none.
func (s *Server) RetryAfter(v string) { s.setKnobs(func(k *knobs) { k.retryAfter = v }) }

// HangReads makes later lists, metadata requests and downloads never
// answer, until the client gives up or the test ends.
func (s *Server) HangReads() { s.setKnobs(func(k *knobs) { k.hangReads = true }) }

// RedirectReadsTo makes later lists, metadata requests and downloads answer
// 307 Temporary Redirect to url.
func (s *Server) RedirectReadsTo(url string) { s.setKnobs(func(k *knobs) { k.redirectReads = url }) }

// StallDownloadsAfter makes later downloads send their headers and n bytes
// of content, then nothing more until the client gives up or the test ends.
func (s *Server) StallDownloadsAfter(n int64) {
	s.setKnobs(func(k *knobs) { k.stallAfter, k.stallDownloads = n, true })
}

// Reset restores normal behaviour; stored files and recorded requests stay.
// DiscardUploads makes the stand-in parse each upload's form as it arrives
// and drop the file's bytes, neither hashing nor keeping them: an upstream
// that drains as fast as the connection allows, for load benchmarks. The
// file is still listed, with its size, and its content is not served.
func (s *Server) DiscardUploads() { s.setKnobs(func(k *knobs) { k.discardUploads = true }) }

func (s *Server) Reset() { s.setKnobs(func(k *knobs) { *k = knobs{stallAfter: -1} }) }

func (s *Server) setKnobs(f func(*knobs)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	f(&s.knobs)
}

// Files returns the files stored now (deleted ones are gone), oldest first.
func (s *Server) Files() []StoredFile {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]StoredFile, 0, len(s.order))
	for _, id := range s.order {
		out = append(out, s.files[id])
	}
	return out
}

// File returns the stored file id.
func (s *Server) File(id string) (StoredFile, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	f, ok := s.files[id]
	return f, ok
}

// DiscardRequests stops keeping the requests the stand-in finishes, so a
// long load run does not grow it without bound; Requests and AwaitRequests
// then see none of the later ones.
func (s *Server) DiscardRequests() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.forget = true
}

// Requests returns every request finished so far, in order of completion.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.requests)
}

// Connections returns how many connections clients have opened so far: a
// client that reuses its connections opens one per concurrent caller, not
// one per request.
func (s *Server) Connections() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.conns
}

// AwaitRequests waits until at least n requests have finished and returns
// them all. A client may return before the stand-in has finished reading an
// aborted request; this is the way to wait for it. Fails the test after 10 s.
func (s *Server) AwaitRequests(t testing.TB, n int) []Request {
	t.Helper()
	timeout := time.NewTimer(10 * time.Second)
	defer timeout.Stop()
	for {
		s.mu.Lock()
		if len(s.requests) >= n {
			out := slices.Clone(s.requests)
			s.mu.Unlock()
			return out
		}
		changed := s.changed
		s.mu.Unlock()
		select {
		case <-changed:
		case <-timeout.C:
			t.Fatalf("providertest: waited 10s for %d requests, have %d", n, len(s.Requests()))
			return nil
		}
	}
}

func (s *Server) begin(r *http.Request) Request {
	return Request{
		Method:           r.Method,
		Path:             r.URL.Path,
		Query:            r.URL.Query(),
		Header:           r.Header.Clone(),
		ContentLength:    r.ContentLength,
		TransferEncoding: slices.Clone(r.TransferEncoding),
		RequestID:        s.dialect.newRequestID(),
	}
}

func (s *Server) finish(rec Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.forget {
		return
	}
	s.requests = append(s.requests, rec)
	close(s.changed)
	s.changed = make(chan struct{})
}

func (s *Server) upload(w http.ResponseWriter, r *http.Request) {
	rec := s.begin(r)
	defer func() { s.finish(rec) }()
	s.mu.Lock()
	k := s.knobs
	s.mu.Unlock()

	// Every refusal reads the request first, as the providers' front ends
	// do, so the client always gets the answer rather than a reset.
	if k.redirectTo != "" {
		drain(r)
		w.Header().Set("Location", k.redirectTo)
		rec.Status = http.StatusTemporaryRedirect
		w.WriteHeader(rec.Status)
		return
	}
	if status, typ, msg := s.authorize(r); status != 0 {
		drain(r)
		s.fail(w, &rec, status, typ, msg)
		return
	}
	var content io.Writer = io.Discard
	var sum hash.Hash
	kept := false
	if !k.discardUploads {
		tmp, err := os.CreateTemp(s.dir, "upload-*")
		if err != nil {
			drain(r)
			s.fail(w, &rec, http.StatusInternalServerError, "api_error", "stand-in cannot keep the upload: "+err.Error())
			return
		}
		defer func() {
			tmp.Close()
			if !kept {
				os.Remove(tmp.Name())
			}
		}()
		content, sum = tmp, sha256.New()
	}
	err := s.readForm(r, &rec, content, sum)
	if err != nil {
		// The body ended early or is not a proper form: nothing is stored.
		s.fail(w, &rec, http.StatusBadRequest, "invalid_request_error", err.Error())
		return
	}
	switch {
	case k.hang:
		// Read to the end of the body first: net/http signals a gone client
		// through the request context only once the body is consumed.
		drain(r)
		select {
		case <-r.Context().Done():
		case <-s.release:
		}
		return
	case k.uploadStatus != 0:
		s.fail(w, &rec, k.uploadStatus, typeForStatus(k.uploadStatus), "stand-in failure requested by the test")
		return
	}
	if msg := s.dialect.checkForm(rec); msg != "" {
		s.fail(w, &rec, http.StatusBadRequest, "invalid_request_error", msg)
		return
	}
	f := StoredFile{
		ID:          s.dialect.newFileID(),
		Filename:    rec.Filename,
		ContentType: rec.ContentType,
		Purpose:     rec.Fields["purpose"],
		Size:        rec.BodyBytes,
		CreatedAt:   time.Now().UTC(),
		RequestID:   rec.RequestID,
	}
	src := source{open: func() (io.ReadCloser, error) { return nil, errors.New("stand-in: content discarded") }}
	if tmp, ok := content.(*os.File); ok {
		f.SHA256 = hex.EncodeToString(sum.Sum(nil))
		f.Downloadable = s.dialect.downloadable(f, false)
		path := tmp.Name()
		kept = true
		src = source{path: path, open: func() (io.ReadCloser, error) { return os.Open(path) }}
	}
	s.store(f, src)
	rec.FileID = f.ID
	s.answer(w, &rec, http.StatusOK, s.dialect.fileObject(f))
}

// readForm streams the multipart body, copying the file part to content
// and, when h is not nil, hashing it. It returns an error for a body that
// is not a complete multipart form.
func (s *Server) readForm(r *http.Request, rec *Request, content io.Writer, h hash.Hash) error {
	mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if err != nil || mt != "multipart/form-data" {
		drain(r)
		return errors.New("Content-Type must be multipart/form-data")
	}
	mr, err := r.MultipartReader()
	if err != nil {
		drain(r)
		return fmt.Errorf("malformed multipart body: %v", err)
	}
	rec.Fields = map[string]string{}
	if h != nil {
		content = io.MultiWriter(h, content)
	}
	for {
		p, err := mr.NextPart()
		if err == io.EOF {
			rec.Complete = true
			return nil
		}
		if err != nil {
			return fmt.Errorf("malformed multipart body: %v", err)
		}
		if p.FormName() == "file" {
			rec.FileParts++
			if rec.FileParts == 1 {
				rec.Filename, rec.ContentType = rawFilename(p.Header), p.Header.Get("Content-Type")
				n, err := io.Copy(content, p)
				rec.BodyBytes += n
				if err != nil {
					return fmt.Errorf("malformed multipart body: %v", err)
				}
				continue
			}
		} else {
			v, err := io.ReadAll(io.LimitReader(p, 4096))
			if err != nil {
				return fmt.Errorf("malformed multipart body: %v", err)
			}
			rec.Fields[p.FormName()] = string(v)
		}
		if _, err := io.Copy(io.Discard, p); err != nil {
			return fmt.Errorf("malformed multipart body: %v", err)
		}
	}
}

func (s *Server) delete(w http.ResponseWriter, r *http.Request) {
	rec := s.begin(r)
	defer func() { s.finish(rec) }()
	if status, typ, msg := s.refuseBodyOrKey(r); status != 0 {
		s.fail(w, &rec, status, typ, msg)
		return
	}
	id := r.PathValue("id")
	rec.FileID = id
	s.mu.Lock()
	status := s.knobs.deleteStatus
	_, ok := s.files[id]
	if ok && status == 0 {
		delete(s.files, id)
		if c := s.contents[id]; c.path != "" {
			// A download still reading it keeps its open file.
			_ = os.Remove(c.path)
		}
		delete(s.contents, id)
		s.order = slices.DeleteFunc(s.order, func(x string) bool { return x == id })
	}
	s.mu.Unlock()
	switch {
	case status != 0:
		s.fail(w, &rec, status, typeForStatus(status), "stand-in failure requested by the test")
	case !ok:
		s.fail(w, &rec, http.StatusNotFound, "not_found_error", "No such File object: "+id)
	default:
		s.answer(w, &rec, http.StatusOK, s.dialect.deleted(id))
	}
}

func (s *Server) authorize(r *http.Request) (status int, typ, msg string) {
	return s.dialect.authorize(r.Header, s.Key)
}

func (s *Server) fail(w http.ResponseWriter, rec *Request, status int, typ, msg string) {
	if status == http.StatusTooManyRequests {
		s.mu.Lock()
		ra := s.knobs.retryAfter
		s.mu.Unlock()
		if ra != "" {
			w.Header().Set("Retry-After", ra)
		}
	}
	s.answer(w, rec, status, s.dialect.errorBody(typ, msg, rec.RequestID))
}

func (s *Server) answer(w http.ResponseWriter, rec *Request, status int, body any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set(s.dialect.requestIDHeader(), rec.RequestID)
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(body)
	rec.Status = status
}

// rawFilename is the filename parameter as sent; Part.FileName would strip
// any folders from it.
func rawFilename(h textproto.MIMEHeader) string {
	_, params, err := mime.ParseMediaType(h.Get("Content-Disposition"))
	if err != nil {
		return ""
	}
	return params["filename"]
}

// drain reads what is left of the request body.
func drain(r *http.Request) { _, _ = io.Copy(io.Discard, r.Body) }

func typeForStatus(status int) string {
	switch status {
	case http.StatusBadRequest:
		return "invalid_request_error"
	case http.StatusUnauthorized:
		return "authentication_error"
	case http.StatusForbidden:
		return "permission_error"
	case http.StatusNotFound:
		return "not_found_error"
	case http.StatusRequestEntityTooLarge:
		return "request_too_large"
	case http.StatusTooManyRequests:
		return "rate_limit_error"
	case 529:
		return "overloaded_error"
	}
	return "api_error"
}

// randomID returns n characters of base62.
func randomID(n int) string {
	const alphabet = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
	b := make([]byte, n)
	_, _ = rand.Read(b)
	var sb strings.Builder
	for _, c := range b {
		sb.WriteByte(alphabet[int(c)%len(alphabet)])
	}
	return sb.String()
}
