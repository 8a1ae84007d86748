package providertest

import (
	"io"
	"net/http"
	"strconv"
	"time"
)

// source is where a stored file's bytes come from.
type source struct {
	open func() (io.ReadCloser, error)
	path string // the temporary file of an upload; empty for seeds
}

// SeedFile describes a file for Seed: one the provider holds without it
// having been uploaded by the code under test (made by a tool, uploaded
// elsewhere), with content of any size produced on demand.
type SeedFile struct {
	Filename    string
	ContentType string // Anthropic's mime_type; empty: application/octet-stream
	Purpose     string // OpenAI; empty: fine-tune
	Size        int64
	// Open returns the content afresh for each download; it must yield
	// exactly Size bytes. Nil: Size zero bytes.
	Open func() io.Reader
	// Downloadable is Anthropic's flag; OpenAI's follows Purpose.
	Downloadable bool
	// CreatedAt: zero is now. Files are listed in the order they were
	// stored, so seed them oldest first.
	CreatedAt time.Time
}

// Seed stores f as the provider would hold it and returns its record.
func (s *Server) Seed(f SeedFile) StoredFile {
	sf := StoredFile{
		ID:          s.dialect.newFileID(),
		Filename:    f.Filename,
		ContentType: f.ContentType,
		Purpose:     f.Purpose,
		Size:        f.Size,
		CreatedAt:   f.CreatedAt.UTC(),
	}
	if sf.Purpose == "" {
		sf.Purpose = "fine-tune"
	}
	if f.CreatedAt.IsZero() {
		sf.CreatedAt = time.Now().UTC()
	}
	sf.Downloadable = s.dialect.downloadable(sf, f.Downloadable)
	open := f.Open
	if open == nil {
		open = func() io.Reader { return eof{} }
	}
	s.store(sf, source{open: func() (io.ReadCloser, error) { return io.NopCloser(open()), nil }})
	return sf
}

type eof struct{}

func (eof) Read([]byte) (int, error) { return 0, io.EOF }

func (s *Server) store(f StoredFile, c source) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.storeLocked(f, c)
}

// storeLocked is store for a caller holding s.mu.
func (s *Server) storeLocked(f StoredFile, c source) {
	s.files[f.ID] = f
	s.contents[f.ID] = c
	s.order = append(s.order, f.ID)
}

// refuseBodyOrKey refuses a request that carries a body where the API takes
// none (GET, DELETE), then checks the key and protocol headers.
func (s *Server) refuseBodyOrKey(r *http.Request) (status int, typ, msg string) {
	if r.ContentLength > 0 || len(r.TransferEncoding) > 0 {
		drain(r)
		return http.StatusBadRequest, "invalid_request_error", "this request takes no body"
	}
	return s.authorize(r)
}

// beginRead applies the read knobs: it answers (and returns false) when
// the test asked for a failure, a redirect or a hang.
func (s *Server) beginRead(w http.ResponseWriter, r *http.Request, rec *Request) bool {
	s.mu.Lock()
	k := s.knobs
	s.mu.Unlock()
	switch {
	case k.redirectReads != "":
		w.Header().Set("Location", k.redirectReads)
		rec.Status = http.StatusTemporaryRedirect
		w.WriteHeader(rec.Status)
		return false
	case k.hangReads:
		select {
		case <-r.Context().Done():
		case <-s.release:
		}
		return false
	}
	if status, typ, msg := s.refuseBodyOrKey(r); status != 0 {
		s.fail(w, rec, status, typ, msg)
		return false
	}
	if k.readStatus != 0 {
		s.fail(w, rec, k.readStatus, typeForStatus(k.readStatus), "stand-in failure requested by the test")
		return false
	}
	return true
}

func (s *Server) list(w http.ResponseWriter, r *http.Request) {
	rec := s.begin(r)
	defer func() { s.finish(rec) }()
	if !s.beginRead(w, r, &rec) {
		return
	}
	page, hasMore, msg := s.dialect.page(rec.Query, s.Files())
	if msg != "" {
		s.fail(w, &rec, http.StatusBadRequest, "invalid_request_error", msg)
		return
	}
	data := make([]any, 0, len(page))
	var first, last any
	for i, f := range page {
		data = append(data, s.dialect.fileObject(f))
		if i == 0 {
			first = f.ID
		}
		last = f.ID
	}
	s.answer(w, &rec, http.StatusOK, s.dialect.list(data, first, last, hasMore))
}

// lookup finds the path's file, or answers the provider's 404.
func (s *Server) lookup(w http.ResponseWriter, r *http.Request, rec *Request) (StoredFile, source, bool) {
	id := r.PathValue("id")
	rec.FileID = id
	s.mu.Lock()
	f, ok := s.files[id]
	c := s.contents[id]
	s.mu.Unlock()
	if !ok {
		s.fail(w, rec, http.StatusNotFound, "not_found_error", "No such File object: "+id)
	}
	return f, c, ok
}

func (s *Server) stat(w http.ResponseWriter, r *http.Request) {
	rec := s.begin(r)
	defer func() { s.finish(rec) }()
	if !s.beginRead(w, r, &rec) {
		return
	}
	if f, _, ok := s.lookup(w, r, &rec); ok {
		s.answer(w, &rec, http.StatusOK, s.dialect.fileObject(f))
	}
}

func (s *Server) content(w http.ResponseWriter, r *http.Request) {
	rec := s.begin(r)
	defer func() { s.finish(rec) }()
	if !s.beginRead(w, r, &rec) {
		return
	}
	f, c, ok := s.lookup(w, r, &rec)
	if !ok {
		return
	}
	if !f.Downloadable {
		s.fail(w, &rec, http.StatusBadRequest, "invalid_request_error", s.dialect.notDownloadable(f))
		return
	}
	body, err := c.open()
	if err != nil {
		s.fail(w, &rec, http.StatusInternalServerError, "api_error", "stand-in cannot read the file: "+err.Error())
		return
	}
	defer body.Close()
	s.mu.Lock()
	stall, stallAfter := s.knobs.stallDownloads, s.knobs.stallAfter
	s.mu.Unlock()

	w.Header().Set("Content-Type", s.dialect.contentType(f))
	w.Header().Set("Content-Length", strconv.FormatInt(f.Size, 10))
	w.Header().Set(s.dialect.requestIDHeader(), rec.RequestID)
	rec.Status = http.StatusOK
	w.WriteHeader(rec.Status)
	if !stall {
		// Struct wrapping hides any WriterTo/ReaderFrom, so the copy goes
		// through one small buffer: what was read is what was sent.
		rec.SentBytes, _ = io.Copy(struct{ io.Writer }{w}, struct{ io.Reader }{body})
		return
	}
	rec.SentBytes, _ = io.CopyN(w, body, stallAfter)
	http.NewResponseController(w).Flush()
	select {
	case <-r.Context().Done():
	case <-s.release:
	}
}
