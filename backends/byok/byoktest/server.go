// Package byoktest provides local stand-ins for the OpenAI and Anthropic
// Files APIs, for tests of anything that uploads with a workspace's own
// provider key. Each stand-in speaks its provider's wire protocol (paths,
// auth and protocol headers, multipart fields, JSON answers and error
// bodies, request-id headers), streams uploads without buffering them,
// records what it received, and has knobs to fail, hang or redirect.
//
// The stand-ins are written from the providers' public API references and
// deliberately share no code or constants with package byok, so a mistake
// there is not mirrored here.
package byoktest

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/http/httptest"
	"net/textproto"
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

// StoredFile is a file a stand-in accepted. The content itself is not kept
// (uploads may be large): compare SHA256 and Size.
type StoredFile struct {
	ID          string
	Filename    string
	ContentType string // of the file part, as sent
	Purpose     string // OpenAI only
	Size        int64
	SHA256      string // hex of the content
	CreatedAt   time.Time
	RequestID   string
}

// Request is one request a stand-in finished handling.
type Request struct {
	Method           string
	Path             string
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
	// FileID is the stored or deleted file, if any.
	FileID string
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
	release chan struct{}

	mu       sync.Mutex
	files    map[string]StoredFile
	order    []string
	requests []Request
	changed  chan struct{} // closed and replaced when requests grows
	knobs    knobs
}

type knobs struct {
	uploadStatus int    // answer uploads with this error status
	deleteStatus int    // answer deletes with this error status
	hang         bool   // read uploads, never answer
	redirectTo   string // answer uploads with 307 to this URL
}

// NewOpenAI starts an OpenAI Files API stand-in, closed when the test ends.
//
//	POST   /v1/files       multipart: purpose, file; Authorization: Bearer
//	DELETE /v1/files/{id}
func NewOpenAI(t testing.TB) *Server { return start(t, openAI{}, OpenAIKey, "/v1") }

// NewAnthropic starts an Anthropic Files API stand-in, closed when the test
// ends.
//
//	POST   /v1/files       multipart: file; x-api-key, anthropic-version,
//	                       anthropic-beta: files-api-2025-04-14
//	DELETE /v1/files/{id}
func NewAnthropic(t testing.TB) *Server { return start(t, anthropic{}, AnthropicKey, "") }

func start(t testing.TB, d dialect, key, basePath string) *Server {
	t.Helper()
	s := &Server{
		Key:     key,
		dialect: d,
		release: make(chan struct{}),
		files:   map[string]StoredFile{},
		changed: make(chan struct{}),
	}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/files", s.upload)
	mux.HandleFunc("DELETE /v1/files/{id}", s.delete)
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		rec := s.begin(r)
		drain(r)
		s.fail(w, &rec, http.StatusNotFound, "not_found_error", "Unknown route "+r.Method+" "+r.URL.Path)
		s.finish(rec)
	})
	s.srv = httptest.NewServer(mux)
	s.BaseURL = s.srv.URL + basePath
	t.Cleanup(s.srv.Close)
	// Runs before Close (cleanups are last-in first-out): hung handlers
	// return, so Close does not wait for them.
	t.Cleanup(func() { close(s.release) })
	return s
}

// FailUploads makes later uploads answer status (>= 400) with the
// provider's error body, after reading the request; 0 restores success.
func (s *Server) FailUploads(status int) { s.setKnobs(func(k *knobs) { k.uploadStatus = status }) }

// FailDeletes makes later deletes answer status with the provider's error
// body; 0 restores success.
func (s *Server) FailDeletes(status int) { s.setKnobs(func(k *knobs) { k.deleteStatus = status }) }

// Hang makes later uploads read the whole request and never answer, until
// the client gives up or the test ends.
func (s *Server) Hang() { s.setKnobs(func(k *knobs) { k.hang = true }) }

// RedirectTo makes later uploads answer 307 Temporary Redirect to url.
func (s *Server) RedirectTo(url string) { s.setKnobs(func(k *knobs) { k.redirectTo = url }) }

// Reset restores normal behaviour; stored files and recorded requests stay.
func (s *Server) Reset() { s.setKnobs(func(k *knobs) { *k = knobs{} }) }

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

// Requests returns every request finished so far, in order of completion.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.requests)
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
			t.Fatalf("byoktest: waited 10s for %d requests, have %d", n, len(s.Requests()))
			return nil
		}
	}
}

func (s *Server) begin(r *http.Request) Request {
	return Request{
		Method:           r.Method,
		Path:             r.URL.Path,
		Header:           r.Header.Clone(),
		ContentLength:    r.ContentLength,
		TransferEncoding: slices.Clone(r.TransferEncoding),
		RequestID:        s.dialect.newRequestID(),
	}
}

func (s *Server) finish(rec Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
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
	sum, err := s.readForm(r, &rec)
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
		SHA256:      sum,
		CreatedAt:   time.Now().UTC(),
		RequestID:   rec.RequestID,
	}
	s.mu.Lock()
	s.files[f.ID] = f
	s.order = append(s.order, f.ID)
	s.mu.Unlock()
	rec.FileID = f.ID
	s.answer(w, &rec, http.StatusOK, s.dialect.fileObject(f))
}

// readForm streams the multipart body, hashing the file part. It returns an
// error for a body that is not a complete multipart form.
func (s *Server) readForm(r *http.Request, rec *Request) (string, error) {
	mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if err != nil || mt != "multipart/form-data" {
		drain(r)
		return "", errors.New("Content-Type must be multipart/form-data")
	}
	mr, err := r.MultipartReader()
	if err != nil {
		drain(r)
		return "", fmt.Errorf("malformed multipart body: %v", err)
	}
	rec.Fields = map[string]string{}
	h := sha256.New()
	for {
		p, err := mr.NextPart()
		if err == io.EOF {
			rec.Complete = true
			return hex.EncodeToString(h.Sum(nil)), nil
		}
		if err != nil {
			return "", fmt.Errorf("malformed multipart body: %v", err)
		}
		if p.FormName() == "file" {
			rec.FileParts++
			if rec.FileParts == 1 {
				rec.Filename, rec.ContentType = rawFilename(p.Header), p.Header.Get("Content-Type")
				n, err := io.Copy(h, p)
				rec.BodyBytes += n
				if err != nil {
					return "", fmt.Errorf("malformed multipart body: %v", err)
				}
				continue
			}
		} else {
			v, err := io.ReadAll(io.LimitReader(p, 4096))
			if err != nil {
				return "", fmt.Errorf("malformed multipart body: %v", err)
			}
			rec.Fields[p.FormName()] = string(v)
		}
		if _, err := io.Copy(io.Discard, p); err != nil {
			return "", fmt.Errorf("malformed multipart body: %v", err)
		}
	}
}

func (s *Server) delete(w http.ResponseWriter, r *http.Request) {
	rec := s.begin(r)
	defer func() { s.finish(rec) }()
	drain(r)
	if status, typ, msg := s.authorize(r); status != 0 {
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
