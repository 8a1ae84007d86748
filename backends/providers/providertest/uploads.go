package providertest

import (
	"bytes"
	"crypto/md5"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"os"
	"slices"
	"time"
)

// OpenAI's limits on its Uploads resource, as its API reference states
// them: an upload holds at most 8 GB, a part at most 64 MB, and an upload
// expires an hour after it is made.
const (
	openAIUploadMaxBytes = 8 << 30
	openAIPartMaxBytes   = 64 << 20
	openAIUploadTTL      = time.Hour
)

// StoredUpload is an upload the OpenAI stand-in holds (Uploads resource).
type StoredUpload struct {
	ID       string
	Bytes    int64
	Filename string
	MimeType string
	Purpose  string
	// Status is pending, completed, cancelled or expired.
	Status    string
	CreatedAt time.Time
	ExpiresAt time.Time
	// Parts are the ids of the parts held, in the order they arrived;
	// none once the upload is completed or cancelled.
	Parts []string
	// PartBytes is the sum of the parts held.
	PartBytes int64
	// FileID is the file made at completion.
	FileID string
}

// part is one part an upload holds, its bytes in a temporary file.
type part struct {
	id        string
	path      string
	size      int64
	createdAt time.Time
}

// uploadState is an upload with its parts.
type uploadState struct {
	StoredUpload
	parts map[string]part
}

// Upload returns the upload id as the OpenAI stand-in holds it now.
func (s *Server) Upload(id string) (StoredUpload, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	u, ok := s.uploads[id]
	if !ok {
		return StoredUpload{}, false
	}
	out := u.StoredUpload
	out.Parts = slices.Clone(u.Parts)
	return out, true
}

// FailUploadRoutes makes later calls of the Uploads resource (create,
// parts, complete, cancel) answer status with OpenAI's error body, after
// reading the request; 0 restores success.
func (s *Server) FailUploadRoutes(status int) {
	s.setKnobs(func(k *knobs) { k.uploadsStatus = status })
}

// routeUploads adds OpenAI's Uploads resource to mux:
//
//	POST /v1/uploads                 JSON: bytes, filename, mime_type, purpose, expires_after?
//	POST /v1/uploads/{id}/parts      multipart: data (at most 64 MB)
//	POST /v1/uploads/{id}/complete   JSON: part_ids, md5?
//	POST /v1/uploads/{id}/cancel
func (s *Server) routeUploads(mux *http.ServeMux) {
	mux.HandleFunc("POST /v1/uploads", s.uploadRoute(s.createUpload))
	mux.HandleFunc("POST /v1/uploads/{id}/parts", s.uploadRoute(s.addPart))
	mux.HandleFunc("POST /v1/uploads/{id}/complete", s.uploadRoute(s.completeUpload))
	mux.HandleFunc("POST /v1/uploads/{id}/cancel", s.uploadRoute(s.cancelUpload))
}

// uploadError is a refusal: OpenAI's status, type and message.
type uploadError struct {
	status   int
	typ, msg string
}

func refuse(status int, msg string) *uploadError {
	return &uploadError{status: status, typ: typeForStatus(status), msg: msg}
}

// uploadRoute checks the key and the knobs (FailUploadRoutes; Hang, which
// holds these calls too), and records the call.
// handle reads the request itself; a refusal it returns is answered in
// OpenAI's error body.
func (s *Server) uploadRoute(handle func(r *http.Request, rec *Request) (any, *uploadError)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		rec := s.begin(r)
		defer func() { s.finish(rec) }()
		if status, typ, msg := s.authorize(r); status != 0 {
			drain(r)
			s.fail(w, &rec, status, typ, msg)
			return
		}
		s.mu.Lock()
		status, hang := s.knobs.uploadsStatus, s.knobs.hang
		s.mu.Unlock()
		if hang {
			drain(r)
			select {
			case <-r.Context().Done():
			case <-s.release:
			}
			return
		}
		if status != 0 {
			drain(r)
			s.fail(w, &rec, status, typeForStatus(status), "stand-in failure requested by the test")
			return
		}
		body, refusal := handle(r, &rec)
		drain(r)
		if refusal != nil {
			s.fail(w, &rec, refusal.status, refusal.typ, refusal.msg)
			return
		}
		s.answer(w, &rec, http.StatusOK, body)
	}
}

// readJSON reads a small JSON body into v, refusing unknown members as
// OpenAI does.
func readJSON(r *http.Request, v any) *uploadError {
	if mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); mt != "application/json" {
		return refuse(http.StatusBadRequest, "Content-Type must be application/json")
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	if err != nil {
		return refuse(http.StatusBadRequest, "could not read the body: "+err.Error())
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return refuse(http.StatusBadRequest, "We could not parse the JSON body of your request: "+err.Error())
	}
	return nil
}

func (s *Server) createUpload(r *http.Request, _ *Request) (any, *uploadError) {
	var req struct {
		Bytes        *int64          `json:"bytes"`
		Filename     *string         `json:"filename"`
		MimeType     *string         `json:"mime_type"`
		Purpose      *string         `json:"purpose"`
		ExpiresAfter json.RawMessage `json:"expires_after"`
	}
	if e := readJSON(r, &req); e != nil {
		return nil, e
	}
	switch {
	case req.Bytes == nil:
		return nil, refuse(http.StatusBadRequest, "Missing required parameter: 'bytes'.")
	case req.Filename == nil || *req.Filename == "":
		return nil, refuse(http.StatusBadRequest, "Missing required parameter: 'filename'.")
	case req.MimeType == nil || *req.MimeType == "":
		return nil, refuse(http.StatusBadRequest, "Missing required parameter: 'mime_type'.")
	case req.Purpose == nil:
		return nil, refuse(http.StatusBadRequest, "Missing required parameter: 'purpose'.")
	case !slices.Contains(openAIPurposes, *req.Purpose):
		return nil, refuse(http.StatusBadRequest, "Invalid value for 'purpose'.")
	case *req.Bytes < 1 || *req.Bytes > openAIUploadMaxBytes:
		return nil, refuse(http.StatusBadRequest, fmt.Sprintf("Invalid value for 'bytes': must be between 1 and %d.", openAIUploadMaxBytes))
	}
	now := time.Now().UTC()
	u := &uploadState{StoredUpload: StoredUpload{
		ID: "upload_" + randomID(24), Bytes: *req.Bytes, Filename: *req.Filename, MimeType: *req.MimeType,
		Purpose: *req.Purpose, Status: "pending", CreatedAt: now, ExpiresAt: now.Add(openAIUploadTTL),
	}, parts: map[string]part{}}
	s.mu.Lock()
	s.uploads[u.ID] = u
	s.mu.Unlock()
	return s.uploadObject(u), nil
}

// pending returns upload id if it takes changes; the caller holds s.mu.
func (s *Server) pending(id string) (*uploadState, *uploadError) {
	u, ok := s.uploads[id]
	switch {
	case !ok:
		return nil, refuse(http.StatusNotFound, "No such Upload: "+id)
	case u.Status == "pending" && !time.Now().Before(u.ExpiresAt):
		u.Status = "expired"
		s.dropParts(u)
	}
	if u.Status != "pending" {
		return nil, refuse(http.StatusBadRequest, "Upload "+id+" is "+u.Status+" and cannot be changed.")
	}
	return u, nil
}

// addPart streams the data part to a temporary file as it arrives,
// refusing it past 64 MB, and keeps it only once the form is whole.
func (s *Server) addPart(r *http.Request, rec *Request) (any, *uploadError) {
	id := r.PathValue("id")
	s.mu.Lock()
	_, refusal := s.pending(id)
	s.mu.Unlock()
	if refusal != nil {
		return nil, refusal
	}
	mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if err != nil || mt != "multipart/form-data" {
		return nil, refuse(http.StatusBadRequest, "Content-Type must be multipart/form-data")
	}
	mr, err := r.MultipartReader()
	if err != nil {
		return nil, refuse(http.StatusBadRequest, "malformed multipart body: "+err.Error())
	}
	tmp, err := os.CreateTemp(s.dir, "part-*")
	if err != nil {
		return nil, refuse(http.StatusInternalServerError, "stand-in cannot keep the part: "+err.Error())
	}
	kept := false
	defer func() {
		tmp.Close()
		if !kept {
			os.Remove(tmp.Name())
		}
	}()
	rec.Fields = map[string]string{}
	for {
		p, err := mr.NextPart()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, refuse(http.StatusBadRequest, "malformed multipart body: "+err.Error())
		}
		if p.FormName() != "data" {
			v, _ := io.ReadAll(io.LimitReader(p, 4096))
			rec.Fields[p.FormName()] = string(v)
			if _, err := io.Copy(io.Discard, p); err != nil {
				return nil, refuse(http.StatusBadRequest, "malformed multipart body: "+err.Error())
			}
			continue
		}
		rec.FileParts++
		if rec.FileParts > 1 {
			return nil, refuse(http.StatusBadRequest, "Only one 'data' part may be sent.")
		}
		rec.Filename, rec.ContentType = rawFilename(p.Header), p.Header.Get("Content-Type")
		n, err := io.Copy(tmp, io.LimitReader(p, openAIPartMaxBytes+1))
		rec.BodyBytes = n
		if err != nil {
			return nil, refuse(http.StatusBadRequest, "malformed multipart body: "+err.Error())
		}
		if n > openAIPartMaxBytes {
			return nil, refuse(http.StatusBadRequest, fmt.Sprintf("Part exceeds the maximum size of %d bytes.", openAIPartMaxBytes))
		}
	}
	rec.Complete = true
	if rec.FileParts == 0 {
		return nil, refuse(http.StatusBadRequest, "Missing required parameter: 'data'.")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	u, refusal := s.pending(id)
	if refusal != nil {
		return nil, refusal
	}
	p := part{id: "part_" + randomID(24), path: tmp.Name(), size: rec.BodyBytes, createdAt: time.Now().UTC()}
	kept = true
	u.parts[p.id] = p
	u.Parts = append(u.Parts, p.id)
	u.PartBytes += p.size
	return map[string]any{"id": p.id, "object": "upload.part", "created_at": p.createdAt.Unix(), "upload_id": u.ID}, nil
}

// completeUpload joins the parts listed into a file, stored as an upload
// through the Files API is, and answers the upload with it. The parts not
// listed are dropped, as OpenAI drops them.
func (s *Server) completeUpload(r *http.Request, rec *Request) (any, *uploadError) {
	var req struct {
		PartIDs []string `json:"part_ids"`
		MD5     *string  `json:"md5"`
	}
	if e := readJSON(r, &req); e != nil {
		return nil, e
	}
	if req.PartIDs == nil {
		return nil, refuse(http.StatusBadRequest, "Missing required parameter: 'part_ids'.")
	}
	id := r.PathValue("id")
	s.mu.Lock()
	u, refusal := s.pending(id)
	var listed []part
	var sum int64
	if refusal == nil {
		seen := map[string]bool{}
		for _, pid := range req.PartIDs {
			p, ok := u.parts[pid]
			if !ok || seen[pid] {
				refusal = refuse(http.StatusBadRequest, "Invalid part_ids: "+pid+" is not a part of this Upload, or is listed twice.")
				break
			}
			seen[pid] = true
			listed = append(listed, p)
			sum += p.size
		}
	}
	if refusal == nil && sum != u.Bytes {
		refusal = refuse(http.StatusBadRequest, fmt.Sprintf("The parts hold %d bytes; the Upload was created for %d.", sum, u.Bytes))
	}
	var snapshot StoredUpload
	if refusal == nil {
		// Completing: no part may come or go until the file is made.
		u.Status = "completing"
		snapshot = u.StoredUpload
	}
	s.mu.Unlock()
	if refusal != nil {
		return nil, refusal
	}
	f, path, err := s.join(snapshot, listed, req.MD5, rec)
	s.mu.Lock()
	defer s.mu.Unlock()
	u.Status = "pending"
	if err != nil {
		return nil, err
	}
	s.storeLocked(f, source{path: path, open: func() (io.ReadCloser, error) { return os.Open(path) }})
	u.Status, u.FileID = "completed", f.ID
	s.dropParts(u)
	rec.FileID = f.ID
	out := s.uploadObject(u)
	out["file"] = s.dialect.fileObject(f)
	return out, nil
}

// join concatenates parts into a new temporary file, checking md5 when
// given, and returns the file to store.
func (s *Server) join(u StoredUpload, parts []part, wantMD5 *string, rec *Request) (StoredFile, string, *uploadError) {
	out, err := os.CreateTemp(s.dir, "upload-*")
	if err != nil {
		return StoredFile{}, "", refuse(http.StatusInternalServerError, "stand-in cannot join the parts: "+err.Error())
	}
	defer out.Close()
	sha, sum := sha256.New(), md5.New()
	var n int64
	for _, p := range parts {
		f, err := os.Open(p.path)
		if err != nil {
			os.Remove(out.Name())
			return StoredFile{}, "", refuse(http.StatusInternalServerError, "stand-in lost a part: "+err.Error())
		}
		c, err := io.Copy(io.MultiWriter(out, sha, sum), f)
		f.Close()
		n += c
		if err != nil {
			os.Remove(out.Name())
			return StoredFile{}, "", refuse(http.StatusInternalServerError, "stand-in cannot join the parts: "+err.Error())
		}
	}
	if wantMD5 != nil && *wantMD5 != hex.EncodeToString(sum.Sum(nil)) {
		os.Remove(out.Name())
		return StoredFile{}, "", refuse(http.StatusBadRequest, "The md5 checksum does not match the uploaded parts.")
	}
	f := StoredFile{
		ID: s.dialect.newFileID(), Filename: u.Filename, ContentType: u.MimeType, Purpose: u.Purpose,
		Size: n, SHA256: hex.EncodeToString(sha.Sum(nil)), CreatedAt: time.Now().UTC(), RequestID: rec.RequestID,
	}
	f.Downloadable = s.dialect.downloadable(f, false)
	return f, out.Name(), nil
}

func (s *Server) cancelUpload(r *http.Request, _ *Request) (any, *uploadError) {
	id := r.PathValue("id")
	s.mu.Lock()
	defer s.mu.Unlock()
	u, refusal := s.pending(id)
	if refusal != nil {
		return nil, refusal
	}
	u.Status = "cancelled"
	s.dropParts(u)
	return s.uploadObject(u), nil
}

// dropParts removes the parts of an upload that no longer takes them; the
// caller holds s.mu.
func (s *Server) dropParts(u *uploadState) {
	for _, p := range u.parts {
		_ = os.Remove(p.path)
	}
	u.parts, u.Parts, u.PartBytes = map[string]part{}, nil, 0
}

// uploadObject is OpenAI's Upload object; the caller holds s.mu or owns u.
func (s *Server) uploadObject(u *uploadState) map[string]any {
	return map[string]any{
		"id": u.ID, "object": "upload", "bytes": u.Bytes, "created_at": u.CreatedAt.Unix(),
		"expires_at": u.ExpiresAt.Unix(), "filename": u.Filename, "purpose": u.Purpose,
		"status": u.Status, "file": nil,
	}
}
