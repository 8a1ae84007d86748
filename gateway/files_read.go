package gateway

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"mime"
	"net/http"
	"net/url"
	"path"
	"strconv"
	"strings"
	"time"

	"github.com/aigateway/gateway/files"
	"github.com/aigateway/gateway/internal/invalid"
	"github.com/aigateway/gateway/policy/keys"
	"github.com/go-chi/chi/v5"
)

// FileReader is what the list, metadata, delete and download routes need.
type FileReader interface {
	List(ctx context.Context, p files.ListParams) (files.Page, error)
	Get(ctx context.Context, p files.FileParams) (files.File, error)
	Delete(ctx context.Context, p files.FileParams) error
	Open(ctx context.Context, p files.FileParams) (*files.Content, error)
}

// Errors of the download route.
var (
	// errRangeNotSatisfiable: the one range asked for lies outside the
	// file (416).
	errRangeNotSatisfiable = errors.New("range not satisfiable")
)

const (
	msgNotDownloadable     = "File is not downloadable"
	msgRangeNotSatisfiable = "Range not satisfiable"
)

// target reads the query parameters every file route takes, from the
// request's query q (the first value of each: these routes are not lists).
func target(q url.Values, caller *keys.APIKey) (files.Target, error) {
	t := files.Target{Key: caller, WorkspaceID: q.Get("workspace_id")}
	if problem := providerParam(&t.Provider)(q.Get("provider")); problem != "" {
		return files.Target{}, badRequest(map[string]any{"provider": problem})
	}
	return t, nil
}

// providerParam reads the provider a file route acts on: openai,
// anthropic, or "" for the gateway's own storage.
func providerParam(dst *string) paramReader {
	return func(v string) string {
		if v != "" && !files.IsProvider(v) {
			return "must be openai or anthropic"
		}
		*dst = v
		return ""
	}
}

func fileParams(r *http.Request, caller *keys.APIKey) (files.FileParams, error) {
	t, err := target(r.URL.Query(), caller)
	if err != nil {
		return files.FileParams{}, err
	}
	return files.FileParams{Target: t, ID: chi.URLParam(r, "id")}, nil
}

// listFiles answers GET /api/v1/files: one page, newest first unless asked
// otherwise, in the negotiated shape.
func (a *API) listFiles(w http.ResponseWriter, r *http.Request, caller *keys.APIKey) error {
	p, byPage, err := fileListParams(r.URL.Query(), caller)
	if err != nil {
		return err
	}
	page, err := a.reader.List(r.Context(), p)
	var pe *files.ParamError
	if byPage && errors.As(err, &pe) && pe.Param == "cursor" {
		// The problem is the client's page, named as it named it.
		return &files.ParamError{Param: "page", Problem: pe.Problem}
	}
	if err != nil {
		return err
	}
	buf := listBuffers.Get().(*[]byte)
	body := appendFileList((*buf)[:0], negotiateShape(r), page)
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	writeBody(w, http.StatusOK, body)
	if cap(body) <= maxPooledList {
		*buf = body
		listBuffers.Put(buf)
	}
	return nil
}

// fileListParams reads the query of GET /files with the one query reader.
// It takes the paging parameters of the three dialects the route speaks:
// cursor (the service's), after, order, limit and purpose (what the OpenAI
// SDKs' files.list sends), after_id, before_id and page (the Anthropic
// SDKs': page is their name for the cursor, the next_page of the previous
// answer). Other parameters are ignored, as they always were here: the
// resources' spec names none to refuse, and a client of a provider's API
// pointed at the gateway may add its own (the OpenAI SDKs' extra_query, the
// api-version an Azure OpenAI client puts on every request). byPage
// reports a cursor sent as page.
func fileListParams(q url.Values, caller *keys.APIKey) (p files.ListParams, byPage bool, err error) {
	var page string
	nonEmpty := func(read paramReader) paramReader { // an empty value is the default
		return func(v string) string {
			if v == "" {
				return ""
			}
			return read(v)
		}
	}
	problems := queryProblems(q, ignoreUnknown, map[string]paramReader{
		"provider":     providerParam(&p.Provider),
		"workspace_id": stringParam(&p.WorkspaceID),
		"cursor":       stringParam(&p.Cursor),
		"page":         stringParam(&page),
		"after":        stringParam(&p.After),
		"after_id":     stringParam(&p.AfterID),
		"before_id":    stringParam(&p.BeforeID),
		"limit":        nonEmpty(intParamSaying(&p.Limit, 1, files.MaxListLimit, files.LimitRule)),
		"order": nonEmpty(func(v string) string {
			o, ok := files.ParseOrder(v)
			if !ok {
				return "must be asc or desc"
			}
			p.Order = o
			return ""
		}),
		"purpose": nonEmpty(func(v string) string {
			purpose, err := files.ParsePurpose(v)
			if fields := invalid.Fields(err); len(fields) > 0 {
				return fields[0].Problem
			}
			p.Purpose = purpose
			return ""
		}),
	})
	if byPage = page != ""; byPage {
		if p.Cursor != "" {
			problems.Add("page", "use either cursor or page")
		}
		p.Cursor = page
	}
	p.Key = caller
	return p, byPage, problems.Err()
}

// getFile answers GET /api/v1/files/{id}.
func (a *API) getFile(w http.ResponseWriter, r *http.Request, caller *keys.APIKey) error {
	p, err := fileParams(r, caller)
	if err != nil {
		return err
	}
	f, err := a.reader.Get(r.Context(), p)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, fileShape(negotiateShape(r), f.Record, f.Downloadable))
	return nil
}

// deleteFile answers DELETE /api/v1/files/{id}.
func (a *API) deleteFile(w http.ResponseWriter, r *http.Request, caller *keys.APIKey) error {
	p, err := fileParams(r, caller)
	if err != nil {
		return err
	}
	if err := a.reader.Delete(r.Context(), p); err != nil {
		return err
	}
	s := negotiateShape(r)
	if s == shapeOpenAI {
		writeJSON(w, http.StatusOK, struct {
			Shape   shape  `json:"_shape"`
			ID      string `json:"id"`
			Object  string `json:"object"`
			Deleted bool   `json:"deleted"`
		}{s, p.ID, "file", true})
		return nil
	}
	writeJSON(w, http.StatusOK, struct {
		Shape shape  `json:"_shape"`
		ID    string `json:"id"`
		Type  string `json:"type"`
	}{s, p.ID, "file_deleted"})
	return nil
}

// fileContent answers GET /api/v1/files/{id}/content: the bytes, streamed
// from storage in constant memory, with one Range honoured and a strong
// ETag (the file id: a file's bytes never change under its id) for
// If-None-Match and If-Range. A provider's
// file is streamed through as the provider sends it, without ranges.
func (a *API) fileContent(w http.ResponseWriter, r *http.Request, caller *keys.APIKey) error {
	p, err := fileParams(r, caller)
	if err != nil {
		return err
	}
	c, err := a.reader.Open(r.Context(), p)
	if err != nil {
		return err
	}
	defer c.Close()
	h := w.Header()
	if !c.Ranged() {
		body, err := c.Body(r.Context())
		if err != nil {
			return err
		}
		setDownloadHeaders(h, r.Header.Get("Accept"), c)
		if c.Size >= 0 {
			h.Set("Content-Length", strconv.FormatInt(c.Size, 10))
		}
		w.WriteHeader(http.StatusOK)
		return a.send(w, body, c.Size)
	}

	etag := `"` + c.File.ID + `"`
	if inm := r.Header.Get("If-None-Match"); inm != "" && etagListMatches(inm, etag) {
		h.Set("ETag", etag)
		w.WriteHeader(http.StatusNotModified)
		return nil
	}
	rangeHeader := r.Header.Get("Range")
	if ir := r.Header.Get("If-Range"); ir != "" && ir != etag {
		rangeHeader = "" // the file changed (or a date was given): send it whole
	} else if len(r.Header["Range"]) > 1 {
		// Two Range fields are two ranges, as one field with a comma
		// would be: refused alike, never the first taken for the answer.
		return badRequest(map[string]any{"Range": "only one range is served"})
	}
	start, length, partial, err := parseRange(rangeHeader, c.Size)
	if errors.Is(err, errRangeNotSatisfiable) {
		h.Set("Content-Range", fmt.Sprintf("bytes */%d", c.Size))
	}
	if err != nil {
		return err
	}
	var body io.ReadCloser
	if partial {
		body, err = c.OpenRange(r.Context(), start, length)
	} else {
		body, err = c.Body(r.Context())
	}
	if err != nil {
		return err
	}
	setDownloadHeaders(h, r.Header.Get("Accept"), c)
	h.Set("ETag", etag)
	h.Set("Accept-Ranges", "bytes")
	h.Set("Content-Length", strconv.FormatInt(length, 10))
	status := http.StatusOK
	if partial {
		h.Set("Content-Range", fmt.Sprintf("bytes %d-%d/%d", start, start+length-1, c.Size))
		status = http.StatusPartialContent
	}
	w.WriteHeader(status)
	if r.Method == http.MethodHead {
		body.Close()
		return nil
	}
	return a.send(w, body, length)
}

// send sends body, length bytes or -1 when unknown, and closes it. A
// failure mid-stream is returned, and writeError then aborts the response:
// the client sees a broken transfer, never a short file that looks complete.
//
// A client that stops reading must not hold its connection and the open
// object for ever (there is no server-wide write timeout: downloads may be
// long). A known length gets one write deadline: the body timeout plus the
// time the length takes at the minimum transfer rate, so the file still
// goes out with sendfile(2). A stream of unknown length (a provider's) gets
// an idle deadline, moved forward as bytes go out.
func (a *API) send(w http.ResponseWriter, body io.ReadCloser, length int64) error {
	defer body.Close()
	rc := http.NewResponseController(w)
	defer func() { _ = rc.SetWriteDeadline(time.Time{}) }() // the next request on the connection starts afresh
	var dst io.Writer = w
	if length >= 0 && a.minUploadRate > 0 {
		_ = rc.SetWriteDeadline(time.Now().Add(a.bodyTimeout + time.Duration(length/a.minUploadRate)*time.Second))
	} else {
		dst = &idleWriter{w: w, rc: rc, idle: a.bodyTimeout}
	}
	// An *os.File (or a limited one) reaches the connection's ReadFrom
	// as is, which sends it with sendfile(2).
	src := io.Reader(body)
	if u, ok := body.(interface{ Unwrap() io.Reader }); ok {
		src = u.Unwrap()
	}
	if _, err := io.Copy(dst, src); err != nil {
		return fmt.Errorf("send file: %w", err)
	}
	return nil
}

// idleWriter moves the write deadline to idle from now as writes succeed,
// at most once a second, so it measures how long the client has not read.
type idleWriter struct {
	w     io.Writer
	rc    *http.ResponseController
	idle  time.Duration
	moved time.Time
}

func (d *idleWriter) Write(p []byte) (int, error) {
	if now := time.Now(); now.Sub(d.moved) >= time.Second {
		d.moved = now
		_ = d.rc.SetWriteDeadline(now.Add(d.idle))
	}
	return d.w.Write(p)
}

func setDownloadHeaders(h http.Header, accept string, c *files.Content) {
	h.Set("Content-Type", downloadType(accept, c.ContentType))
	h.Set("Content-Disposition", attachment(c.File.Filename))
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Cache-Control", "private, no-cache")
}

// downloadType is the Content-Type of a download: the file's own, unless
// the client's Accept rules it out but takes application/octet-stream (the
// service's SDK asks for exactly that and refuses any other type).
func downloadType(accept, fileType string) string {
	const octets = "application/octet-stream"
	if accept == "" || accepts(accept, fileType) || !accepts(accept, octets) {
		return fileType
	}
	return octets
}

// accepts reports whether an Accept header admits mediaType: an exact
// range, type/* or */*, without q=0.
func accepts(accept, mediaType string) bool {
	typ, _, _ := strings.Cut(mediaType, "/")
	for _, r := range strings.Split(accept, ",") {
		rangeType, params, err := mime.ParseMediaType(strings.TrimSpace(r))
		if err != nil || params["q"] == "0" || params["q"] == "0.0" || params["q"] == "0.000" {
			continue
		}
		if rangeType == "*/*" || rangeType == mediaType || rangeType == typ+"/*" {
			return true
		}
	}
	return false
}

// attachment is a Content-Disposition naming the file (its last path
// segment), encoded by mime.FormatMediaType: quoted when plain ASCII, as
// RFC 5987 filename* when not (RFC 6266 §4.3), so no stored name can break
// out of the header.
func attachment(filename string) string {
	base := path.Base(filename)
	if base == "." || base == "/" {
		base = "file"
	}
	if v := mime.FormatMediaType("attachment", map[string]string{"filename": base}); v != "" {
		return v
	}
	return "attachment"
}

// etagListMatches reports whether an If-None-Match list names etag (weak
// comparison, as RFC 9110 §13.1.2 asks for this header) or is "*".
func etagListMatches(list, etag string) bool {
	for _, t := range strings.Split(list, ",") {
		t = strings.TrimSpace(t)
		if t == "*" || strings.TrimPrefix(t, "W/") == etag {
			return true
		}
	}
	return false
}

// parseRange reads a Range header of one byte range against a file of
// size bytes. An empty header is the whole file. A header that is not one
// well-formed byte range is a 400 naming Range; a range starting past the
// end (or a suffix of zero bytes) is errRangeNotSatisfiable.
func parseRange(header string, size int64) (start, length int64, partial bool, err error) {
	if header == "" {
		return 0, size, false, nil
	}
	bad := func(problem string) error { return badRequest(map[string]any{"Range": problem}) }
	// The range unit is case-insensitive (RFC 9110 14.1).
	const unit = "bytes="
	if len(header) < len(unit) || !strings.EqualFold(header[:len(unit)], unit) {
		return 0, 0, false, bad("must be bytes=first-last")
	}
	spec := header[len(unit):]
	if strings.Contains(spec, ",") {
		return 0, 0, false, bad("only one range is served")
	}
	first, last, ok := strings.Cut(strings.TrimSpace(spec), "-")
	if !ok {
		return 0, 0, false, bad("must be bytes=first-last")
	}
	// A position too large for int64 is clamped, not refused (RFC 9110
	// 14.1.2: a last position past the end means the end; a first one
	// past it is unsatisfiable either way).
	num := func(s string) (int64, bool) {
		if s == "" || strings.TrimLeft(s, "0123456789") != "" {
			return 0, false
		}
		n, err := strconv.ParseInt(s, 10, 64)
		if errors.Is(err, strconv.ErrRange) {
			return math.MaxInt64, true
		}
		return n, err == nil
	}
	if first == "" { // the last n bytes
		n, ok := num(last)
		if !ok {
			return 0, 0, false, bad("must be bytes=first-last")
		}
		if n == 0 || size == 0 {
			return 0, 0, false, errRangeNotSatisfiable
		}
		n = min(n, size)
		return size - n, n, true, nil
	}
	start, ok = num(first)
	if !ok {
		return 0, 0, false, bad("must be bytes=first-last")
	}
	end := size - 1
	if last != "" {
		e, ok := num(last)
		if !ok || e < start {
			return 0, 0, false, bad("must be bytes=first-last with first <= last")
		}
		end = min(e, size-1)
	}
	if start >= size {
		return 0, 0, false, errRangeNotSatisfiable
	}
	return start, end - start + 1, true, nil
}
