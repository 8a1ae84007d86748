package gateway

import (
	"bufio"
	"context"
	"errors"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"strings"
	"time"

	"github.com/aigateway/gateway/files"
)

// FileService is what the upload route needs.
type FileService interface {
	MaxFileBytes() int64
	Begin(ctx context.Context, p files.Params) (*files.Upload, error)
}

// Multipart limits beyond the file itself: what the other form fields, the
// boundaries and part headers may add. A declared Content-Length above
// max_file_bytes plus this is refused before a byte of the body is read.
const (
	multipartSlack     = 1 << 20
	maxParts           = 16
	maxFieldBytes      = 64 << 10 // all non-file fields together
	maxPartHeaderBytes = 8 << 10
	uploadReadBuffer   = 64 << 10
	// uploadIdleTimeout is how long an upload may send nothing before the
	// connection is dropped; a deadline per read, not per upload, so slow
	// but steady clients finish and stalled ones do not hold a slot.
	uploadIdleTimeout = 60 * time.Second
)

// uploadFile answers POST /api/v1/files: one multipart part named "file",
// streamed to its destination as it arrives.
func (a *API) uploadFile(w http.ResponseWriter, r *http.Request) error {
	if a.files == nil {
		return errUnavailable
	}
	limit := a.files.MaxFileBytes() + multipartSlack
	if r.ContentLength > limit {
		// Refused before reading: net/http sends no 100 Continue to a
		// client that asked for one, and the body is never read.
		return errTooLarge
	}
	q := r.URL.Query()
	provider := q.Get("provider")
	if provider != "" && provider != "openai" && provider != "anthropic" {
		return badRequest(map[string]any{"provider": "must be openai or anthropic"})
	}
	mt, params, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if err != nil || mt != "multipart/form-data" || params["boundary"] == "" {
		return badRequest(map[string]any{"content_type": "must be multipart/form-data with a boundary"})
	}
	// multipart.Reader reads 4 KiB at a time; a larger buffer under it cuts
	// the read syscalls of a 100 MiB upload about sixteenfold.
	body := bufio.NewReaderSize(http.MaxBytesReader(w, r.Body, limit), uploadReadBuffer)
	mr := multipart.NewReader(body, params["boundary"])

	up, err := a.files.Begin(r.Context(), files.Params{
		Key:         keyFrom(r.Context()),
		WorkspaceID: q.Get("workspace_id"),
		Provider:    provider,
		Declared:    r.ContentLength,
	})
	if err != nil {
		return err
	}
	defer up.Abort(r.Context())

	idle := &idleDeadline{rc: http.NewResponseController(w)}
	seenFile, fieldBytes := false, int64(0)
	for parts := 0; ; parts++ {
		idle.extend()
		part, err := mr.NextRawPart()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return multipartError(err)
		}
		if parts >= maxParts {
			return badRequest(map[string]any{"body": "too many form parts"})
		}
		if headerBytes(part) > maxPartHeaderBytes {
			return badRequest(map[string]any{"body": "form part headers too long"})
		}
		if part.FormName() != "file" {
			n, err := io.Copy(io.Discard, io.LimitReader(&partReader{p: part, idle: idle}, maxFieldBytes-fieldBytes+1))
			fieldBytes += n
			if err != nil {
				return multipartError(err)
			}
			if fieldBytes > maxFieldBytes {
				return badRequest(map[string]any{"body": "form fields other than file are too large"})
			}
			continue
		}
		if seenFile {
			return badRequest(map[string]any{"file": "only one file part is allowed"})
		}
		seenFile = true
		filename, err := files.PartFilename(part.Header)
		if err != nil {
			return err
		}
		if err := up.Write(r.Context(), filename, &partReader{p: part, idle: idle}); err != nil {
			return multipartError(err)
		}
	}
	if !seenFile {
		return badRequest(map[string]any{"file": "required"})
	}
	rec, err := up.Commit(r.Context())
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, fileShape(r, rec))
	return nil
}

// multipartError turns a failure of reading the body into its answer: the
// size limits keep their 413, a client that went away its cancellation,
// anything else the body's fault.
func multipartError(err error) error {
	var maxErr *http.MaxBytesError
	switch {
	case errors.As(err, &maxErr), errors.Is(err, files.ErrTooLarge):
		return err
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return err
	case errors.Is(err, io.ErrUnexpectedEOF), strings.Contains(err.Error(), "multipart"):
		// mime/multipart reports malformed bodies only as text; these are the
		// client's bytes, so a 400 says so without echoing them.
		return badRequest(map[string]any{"body": "malformed multipart body"})
	default:
		return err
	}
}

func headerBytes(p *multipart.Part) int {
	n := 0
	for k, vs := range p.Header {
		for _, v := range vs {
			n += len(k) + len(v) + 4
		}
	}
	return n
}

// partReader reads a part and pushes the connection's read deadline forward
// as bytes arrive.
type partReader struct {
	p    *multipart.Part
	idle *idleDeadline
}

func (r *partReader) Read(b []byte) (int, error) {
	r.idle.extend()
	return r.p.Read(b)
}

// idleDeadline moves the connection's read deadline at most once a second,
// so the deadline measures idleness, not the length of the upload.
type idleDeadline struct {
	rc       *http.ResponseController
	extended time.Time
}

func (d *idleDeadline) extend() {
	now := time.Now()
	if now.Sub(d.extended) < time.Second {
		return
	}
	d.extended = now
	_ = d.rc.SetReadDeadline(now.Add(uploadIdleTimeout))
}

// The three answer shapes of an upload (DESIGN.md §2): same status, same
// file, dressed as the client expects.
type serviceFile struct {
	Shape        string `json:"_shape"`
	ID           string `json:"id"`
	Type         string `json:"type"`
	Filename     string `json:"filename"`
	MimeType     string `json:"mime_type"`
	SizeBytes    int64  `json:"size_bytes"`
	Downloadable bool   `json:"downloadable"`
	CreatedAt    string `json:"created_at"`
}

type openAIFile struct {
	Shape     string `json:"_shape"`
	ID        string `json:"id"`
	Object    string `json:"object"`
	Bytes     int64  `json:"bytes"`
	CreatedAt int64  `json:"created_at"`
	Filename  string `json:"filename"`
	Purpose   string `json:"purpose"`
	Status    string `json:"status"`
}

func fileShape(r *http.Request, rec files.Record) any {
	if looksLikeOpenAISDK(r) {
		return openAIFile{
			Shape: "openai", ID: rec.ID, Object: "file", Bytes: rec.Size, CreatedAt: rec.CreatedAt.Unix(),
			Filename: rec.Filename, Purpose: "user_data", Status: "processed",
		}
	}
	shape := "service"
	if r.Header.Get("anthropic-version") != "" {
		shape = "anthropic"
	}
	return serviceFile{
		Shape: shape, ID: rec.ID, Type: "file", Filename: rec.Filename, MimeType: rec.MimeType,
		SizeBytes: rec.Size, Downloadable: false, CreatedAt: rec.CreatedAt.UTC().Format(time.RFC3339Nano),
	}
}

func looksLikeOpenAISDK(r *http.Request) bool {
	if strings.HasPrefix(r.Header.Get("User-Agent"), "OpenAI/") {
		return true
	}
	for name := range r.Header {
		if strings.HasPrefix(name, "X-Stainless-") {
			return true
		}
	}
	return false
}
