package gateway

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"net/textproto"
	"time"

	"github.com/aigateway/gateway/files"
	"github.com/aigateway/gateway/policy/keys"
)

// FileService is what the upload route needs.
type FileService interface {
	MaxFileBytes() int64
	Begin(ctx context.Context, p files.Params) (files.Upload, error)
}

// Multipart limits beyond the file itself: what the other form fields, the
// boundaries and part headers may add. A declared Content-Length above
// max_file_bytes plus this is refused before a byte of the body is read.
const (
	multipartSlack     = 1 << 20
	maxParts           = 16
	maxFieldBytes      = 64 << 10 // all non-file fields together
	maxPartHeaderBytes = 8 << 10
	// uploadReadBuffer is the most read from the client's connection at a
	// time: forwarding to a provider (bench/forward.sh), 256 KiB reads took
	// about a quarter less of the gateway's CPU per GB than 64 KiB ones.
	uploadReadBuffer = 256 << 10
)

// uploadReader is the buffer under mime/multipart's own 4 KiB one, which
// would otherwise make a read of the connection per 4 KiB; a body declared
// smaller than uploadReadBuffer gets a buffer of its size (at least 4 KiB),
// so a small upload does not allocate the large one.
func uploadReader(body io.Reader, declared int64) *bufio.Reader {
	size := uploadReadBuffer
	if declared >= 0 && declared < uploadReadBuffer {
		size = max(int(declared), multipartPeek)
	}
	return bufio.NewReaderSize(body, size)
}

// uploadFile answers POST /api/v1/files: one multipart part named "file",
// streamed to its destination as it arrives.
func (a *API) uploadFile(w http.ResponseWriter, r *http.Request, caller *keys.APIKey) error {
	limit := a.files.MaxFileBytes() + multipartSlack
	if r.ContentLength > limit {
		// Refused before reading: net/http sends no 100 Continue to a
		// client that asked for one, and the file is never stored. The
		// answer is the one a file found too large while streaming gets.
		return &files.TooLargeError{Limit: a.files.MaxFileBytes()}
	}
	q := r.URL.Query()
	provider := q.Get("provider")
	if provider != "" && !files.IsProvider(provider) {
		return badRequest(map[string]any{"provider": "must be openai or anthropic"})
	}
	mt, params, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if err != nil || mt != "multipart/form-data" || params["boundary"] == "" {
		return badRequest(map[string]any{"content_type": "must be multipart/form-data with a boundary"})
	}
	body := newBodyReader(w, r, limit)
	headers := &headerBudget{r: uploadReader(body, r.ContentLength), left: -1}
	mr := multipart.NewReader(headers, params["boundary"])

	up, err := a.files.Begin(r.Context(), files.Params{
		Key:         caller,
		WorkspaceID: q.Get("workspace_id"),
		Provider:    provider,
		Declared:    r.ContentLength,
	})
	if err != nil {
		return err
	}
	defer up.Abort(r.Context())

	idle := &uploadPace{clock: bodyClockOf(r), idle: a.bodyTimeout, minRate: a.minUploadRate, start: time.Now()}
	purpose, seenPurpose := files.DefaultPurpose, false
	seenFile, fieldBytes := false, int64(0)
	for parts := 0; ; parts++ {
		idle.extend()
		headers.arm(maxPartHeaderBytes + 2*multipartPeek + len(params["boundary"]))
		part, err := mr.NextRawPart()
		headers.disarm()
		if headers.exceeded {
			return badRequest(map[string]any{"body": "form part headers too long"})
		}
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return malformed(body, err)
		}
		if parts >= maxParts {
			return badRequest(map[string]any{"body": "too many form parts"})
		}
		if headerBytes(part) > maxPartHeaderBytes {
			return badRequest(map[string]any{"body": "form part headers too long"})
		}
		pr := &partReader{p: part, idle: idle}
		if name := part.FormName(); name != "file" {
			// Fields are small and bounded together; the one the gateway
			// reads is purpose, which may come before or after the file
			// (the Python SDKs send it first, the Node ones after).
			value, err := io.ReadAll(io.LimitReader(pr, maxFieldBytes-fieldBytes+1))
			fieldBytes += int64(len(value))
			if err != nil {
				return malformed(body, err)
			}
			if fieldBytes > maxFieldBytes {
				return badRequest(map[string]any{"body": "form fields other than file are too large"})
			}
			if name == "purpose" {
				if seenPurpose {
					return badRequest(map[string]any{"purpose": "sent more than once"})
				}
				seenPurpose = true
				if purpose, err = files.ParsePurpose(string(value)); err != nil {
					return err
				}
			}
			continue
		}
		if seenFile {
			return badRequest(map[string]any{"file": "only one file part is allowed"})
		}
		seenFile = true
		filename, err := partFilename(part.Header)
		if err != nil {
			return err
		}
		if err := up.Write(r.Context(), filename, pr); err != nil {
			if pr.err != nil {
				// The body failed under the upload: that, not what the
				// destination made of it, is the answer.
				return malformed(body, pr.err)
			}
			return err
		}
	}
	if !seenFile {
		return badRequest(map[string]any{"file": "required"})
	}
	rec, err := up.Commit(r.Context(), purpose)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, fileShape(negotiateShape(r), rec, a.downloadable(rec)))
	return nil
}

// describer is the part of a FileReader that shows a file as the read
// routes do.
type describer interface {
	Describe(files.Record) files.File
}

// downloadable is what the read routes say of rec's downloadable, so the
// upload's answer and a later GET agree.
func (a *API) downloadable(rec files.Record) bool {
	if d, ok := a.reader.(describer); ok {
		return d.Describe(rec).Downloadable
	}
	return false
}

// malformed is the answer to err, met while parsing the multipart body:
// the client's connection's own failure when reading it failed (413 past
// the size limit), else the bytes were malformed (400).
//
// The failure is told apart by where it came from, not by its type:
// mime/multipart reports some malformed bodies as *textproto.ProtocolError,
// multipart.ErrMessageTooLarge or io.ErrUnexpectedEOF, but others ("expecting
// a new Part", "unexpected line") only as text. Whatever it says, when the
// connection delivered every byte it was asked for the fault is in the
// bytes, and the answer never echoes them.
func malformed(body *bodyReader, err error) error {
	if body.err != nil {
		return body.err
	}
	if errors.Is(err, errBodyTimeout) {
		return err // the upload's pace, not its bytes
	}
	return &requestError{meta: map[string]any{"fields": map[string]any{"body": "malformed multipart body"}}, cause: err}
}

// multipartPeek is the read-ahead of mime/multipart's own buffer: what it
// may read past a part's headers while looking for their end.
const multipartPeek = 4096

// headerBudget bounds what mime/multipart may read while it parses a
// part's boundary and headers. Left alone it buffers up to 10 MiB of
// header lines per part before the handler could check them; armed with a
// budget, a read past it fails and the request is refused at the reader,
// so a request's memory stays at its fixed buffers.
type headerBudget struct {
	r        io.Reader
	left     int // bytes the armed budget still allows; -1 when disarmed
	exceeded bool
}

func (h *headerBudget) arm(n int) { h.left = n }
func (h *headerBudget) disarm()   { h.left = -1 }

func (h *headerBudget) Read(p []byte) (int, error) {
	if h.left < 0 {
		return h.r.Read(p)
	}
	if h.left == 0 {
		h.exceeded = true
		return 0, errPartHeadersTooLong
	}
	if len(p) > h.left {
		p = p[:h.left]
	}
	n, err := h.r.Read(p)
	h.left -= n
	return n, err
}

var errPartHeadersTooLong = errors.New("form part headers too long")

// partFilename returns the raw filename of a multipart part from its
// Content-Disposition header, folders included, without validating it (pass
// it to files.ValidateFilename). Use it rather than
// multipart.Part.FileName(), which applies filepath.Base (RFC 7578 §4.2
// tells receivers to drop paths; we keep them, checked, because the spec
// allows folders).
//
// The value is mime.ParseMediaType's: an RFC 5987 filename* in UTF-8 wins
// over a plain filename, and its percent-escapes are decoded (so it may hold
// control characters or invalid UTF-8, which files.ValidateFilename
// refuses). Browsers escape `"`, CR and LF in a plain filename as %22, %0D
// and %0A; that is not undone, since "%22" is an ordinary filename too.
//
// Errors: a *files.FilenameError with files.RuleMissing when the header is
// absent, malformed, or has no (or an empty) filename.
func partFilename(h textproto.MIMEHeader) (string, error) {
	_, params, err := mime.ParseMediaType(h.Get("Content-Disposition"))
	if err != nil || params["filename"] == "" {
		return "", &files.FilenameError{Rule: files.RuleMissing}
	}
	return params["filename"], nil
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

// partReader reads a part, keeping the upload's pace. It remembers the
// part's first failure, so a caller whose consumer (a storage SDK, a
// provider client) wrapped or replaced the error still knows the body
// failed.
type partReader struct {
	p    *multipart.Part
	idle *uploadPace
	err  error
}

func (r *partReader) Read(b []byte) (int, error) {
	r.idle.extend()
	n, err := r.p.Read(b)
	if err == nil {
		err = r.idle.count(n)
	}
	if err != nil && err != io.EOF && r.err == nil {
		r.err = err
	}
	return n, err
}

// uploadPace keeps an upload's body moving. Each read pushes the
// connection's read deadline forward by the idle timeout (at most once a
// second, so the deadline measures idleness, not the length of the upload),
// and once the idle timeout has passed since the start, the bytes received
// must average at least minRate per second: a trickle must not hold an
// upload slot and its quota reservation for as long as it likes, nor may a
// steady client that is merely slow be cut off by a per-read rule.
type uploadPace struct {
	clock   *bodyClock // nil when the request has no body clock (handler tests)
	idle    time.Duration
	minRate int64 // bytes per second averaged over the upload; 0: none
	start   time.Time
	n       int64
}

func (p *uploadPace) extend() {
	if p.clock != nil {
		p.clock.extend(p.idle)
	}
}

// count adds n bytes received and fails with errBodyTimeout (408) when the
// average has fallen below the minimum rate.
func (p *uploadPace) count(n int) error {
	p.n += int64(n)
	if p.minRate <= 0 {
		return nil
	}
	elapsed := time.Since(p.start)
	if elapsed < p.idle || float64(p.n) >= float64(p.minRate)*elapsed.Seconds() {
		return nil
	}
	return fmt.Errorf("%w: %d bytes in %s, under the minimum of %d bytes/s", errBodyTimeout, p.n, elapsed.Round(time.Second), p.minRate)
}
