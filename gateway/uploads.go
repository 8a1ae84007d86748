package gateway

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"time"

	"github.com/aigateway/gateway/files"
	"github.com/aigateway/gateway/internal/invalid"
	"github.com/aigateway/gateway/internal/jsonobj"
	"github.com/aigateway/gateway/policy/keys"
	"go.uber.org/zap"
)

// UploadService serves the resumable upload routes (files.Resumable).
type UploadService interface {
	MaxPartBytes() int64
	Create(ctx context.Context, c files.CreateUpload) (files.UploadRecord, error)
	Get(ctx context.Context, ref files.UploadRef) (files.UploadState, error)
	AddPart(ctx context.Context, ref files.UploadRef, body io.Reader, declared int64, rest func() error) (files.UploadPart, error)
	Complete(ctx context.Context, c files.CompleteUpload) (files.UploadState, error)
	Cancel(ctx context.Context, ref files.UploadRef) (files.UploadRecord, error)
}

// uploadObject is OpenAI's Upload object, which every caller gets: the SDKs
// that drive uploads are OpenAI's. Its file is in the caller's shape, as
// POST /files answers it.
type uploadObject struct {
	ID        string        `json:"id"`
	Object    string        `json:"object"`
	Bytes     int64         `json:"bytes"`
	CreatedAt int64         `json:"created_at"`
	ExpiresAt int64         `json:"expires_at"`
	Filename  string        `json:"filename"`
	Purpose   files.Purpose `json:"purpose"`
	Status    string        `json:"status"`
	File      any           `json:"file"`
	// Parts are what GET /uploads/{id} adds, so that a client that lost
	// its answers can resume.
	Parts *[]uploadPartView `json:"parts,omitempty"`
}

type uploadPartView struct {
	ID        string `json:"id"`
	Bytes     int64  `json:"bytes"`
	CreatedAt int64  `json:"created_at"`
}

// uploadPartObject is OpenAI's Upload Part object.
type uploadPartObject struct {
	ID        string `json:"id"`
	Object    string `json:"object"`
	CreatedAt int64  `json:"created_at"`
	UploadID  string `json:"upload_id"`
}

func (a *API) viewUpload(r *http.Request, st files.UploadState, withParts bool) uploadObject {
	u := st.Upload
	v := uploadObject{
		ID: u.ID, Object: "upload", Bytes: u.Bytes, CreatedAt: u.CreatedAt.Unix(), ExpiresAt: u.ExpiresAt.Unix(),
		Filename: u.Filename, Purpose: u.Purpose, Status: string(u.Status),
	}
	if st.File != nil {
		v.File = fileShape(negotiateShape(r), *st.File, a.downloadable(*st.File))
	}
	if withParts {
		parts := make([]uploadPartView, len(st.Parts))
		for i, p := range st.Parts {
			parts[i] = uploadPartView{ID: p.ID, Bytes: p.Bytes, CreatedAt: p.CreatedAt.Unix()}
		}
		v.Parts = &parts
	}
	return v
}

// uploadRef reads the upload named by the path and the workspace_id and
// provider parameters.
func uploadRef(r *http.Request, caller *keys.APIKey) (files.UploadRef, error) {
	id, err := pathSegment(r, "id")
	if err != nil {
		return files.UploadRef{}, err
	}
	provider, err := uploadProvider(r)
	if err != nil {
		return files.UploadRef{}, err
	}
	return files.UploadRef{Key: caller, WorkspaceID: r.URL.Query().Get("workspace_id"), ID: id, Provider: provider}, nil
}

// uploadProvider reads the provider parameter of an upload route: absent
// for the gateway's own storage; the upload service judges its value.
func uploadProvider(r *http.Request) (string, error) {
	q := r.URL.Query()
	if q.Has("provider") && q.Get("provider") == "" {
		return "", badRequest(map[string]any{"provider": "must be openai or anthropic"})
	}
	return q.Get("provider"), nil
}

// createUpload answers POST /api/v1/uploads.
func (a *API) createUpload(w http.ResponseWriter, r *http.Request, caller *keys.APIKey) error {
	provider, err := uploadProvider(r)
	if err != nil {
		return err
	}
	body, idemKey, err := readJSONBody(w, r, maxJSONBody)
	if err != nil {
		return err
	}
	req, err := readUploadCreation(body)
	if err != nil {
		return err
	}
	c := files.CreateUpload{
		Key: caller, WorkspaceID: r.URL.Query().Get("workspace_id"),
		Bytes: req.Bytes, Filename: req.Filename, MimeType: req.MimeType, Purpose: req.Purpose, Provider: provider,
	}
	if idemKey != "" {
		c.Idempotency = &files.UploadIdempotency{UserID: caller.UserID, Key: idemKey, RequestHash: requestFingerprint(c.WorkspaceID, provider, req)}
	}
	rec, err := a.uploads.Create(r.Context(), c)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, a.viewUpload(r, files.UploadState{Upload: rec}, false))
	return nil
}

// uploadCreation is the body of POST /uploads.
type uploadCreation struct {
	Bytes    int64         `json:"bytes"`
	Filename string        `json:"filename"`
	MimeType string        `json:"mime_type"`
	Purpose  files.Purpose `json:"purpose"`
}

// readUploadCreation decodes the body of POST /uploads, naming every
// problem at once. All four fields are required, as OpenAI requires them.
// expires_after is refused: files kept by this gateway do not expire, and
// accepting it would promise what is not done.
func readUploadCreation(body []byte) (uploadCreation, error) {
	var (
		req  uploadCreation
		p    invalid.Problems
		seen = map[string]bool{}
	)
	doc := walkObject(body, func(key string, raw json.RawMessage) {
		seen[key] = true
		switch key {
		case "bytes":
			var n int64
			if num, ok := jsonobj.Number(raw); !ok || json.Unmarshal([]byte(num), &n) != nil {
				p.Add(key, "must be a whole number of bytes")
				return
			}
			req.Bytes = n
		case "filename", "mime_type", "purpose":
			s, ok := jsonobj.String(raw)
			if !ok {
				p.Add(key, "must be a string")
				return
			}
			switch key {
			case "filename":
				req.Filename = s
			case "mime_type":
				req.MimeType = s
			case "purpose":
				if s == "" {
					p.Add(key, "must not be empty")
					return
				}
				purpose, err := files.ParsePurpose(s)
				if err != nil {
					p.Add(key, invalid.Fields(err)[0].Problem)
					return
				}
				req.Purpose = purpose
			}
		case "expires_after":
			p.Add(key, "files kept by this gateway do not expire; leave it out")
		default:
			p.Add(key, "unknown field")
		}
	})
	if doc != nil {
		p.Add(doc.Name, doc.Problem)
		return req, p.Err()
	}
	for _, f := range []string{"bytes", "filename", "mime_type", "purpose"} {
		if !seen[f] {
			p.Add(f, "required")
		}
	}
	return req, p.Err()
}

// requestFingerprint hashes what makes two creations the same request,
// so a retry that differs only in whitespace or key order is the same.
func requestFingerprint(workspaceID, provider string, req uploadCreation) string {
	b, _ := json.Marshal(struct {
		WorkspaceID string
		Provider    string `json:",omitempty"` // so a native creation's hash is what it was
		Req         uploadCreation
	}{workspaceID, provider, req}) // plain fields always encode
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// getUpload answers GET /api/v1/uploads/{id}.
func (a *API) getUpload(w http.ResponseWriter, r *http.Request, caller *keys.APIKey) error {
	ref, err := uploadRef(r, caller)
	if err != nil {
		return err
	}
	st, err := a.uploads.Get(r.Context(), ref)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, a.viewUpload(r, st, true))
	return nil
}

// cancelUpload answers POST /api/v1/uploads/{id}/cancel.
func (a *API) cancelUpload(w http.ResponseWriter, r *http.Request, caller *keys.APIKey) error {
	ref, err := uploadRef(r, caller)
	if err != nil {
		return err
	}
	if err := discardSmallBody(w, r); err != nil {
		return err
	}
	rec, err := a.uploads.Cancel(r.Context(), ref)
	if err != nil {
		return err
	}
	a.log.Info("upload cancelled", zap.String("upload_id", rec.ID), zap.String("key_id", caller.ID))
	writeJSON(w, http.StatusOK, a.viewUpload(r, files.UploadState{Upload: rec}, false))
	return nil
}

// discardSmallBody reads what a body-less POST may carry (the SDKs send
// an empty JSON object or nothing), refusing more than a JSON body's size.
func discardSmallBody(w http.ResponseWriter, r *http.Request) error {
	_, err := io.Copy(io.Discard, newBodyReader(w, r, maxJSONBody))
	return err
}

// completeUpload answers POST /api/v1/uploads/{id}/complete.
func (a *API) completeUpload(w http.ResponseWriter, r *http.Request, caller *keys.APIKey) error {
	ref, err := uploadRef(r, caller)
	if err != nil {
		return err
	}
	// 10,000 part ids of 29 characters, quoted and separated, and room
	// for the rest.
	body, _, err := readJSONBody(w, r, 512<<10)
	if err != nil {
		return err
	}
	c := files.CompleteUpload{Ref: ref}
	var p invalid.Problems
	seenIDs := false
	doc := walkObject(body, func(key string, raw json.RawMessage) {
		switch key {
		case "part_ids":
			seenIDs = true
			err := jsonobj.Elements(raw, func(_ int, v json.RawMessage) bool {
				s, ok := jsonobj.String(v)
				if !ok {
					p.Add(key, "must be an array of part ids")
					return false
				}
				c.PartIDs = append(c.PartIDs, s)
				return true
			})
			if err != nil {
				p.Add(key, "must be an array of part ids")
			}
		case "md5":
			s, ok := jsonobj.String(raw)
			if !ok {
				p.Add(key, "must be a string")
				return
			}
			c.MD5 = s
		default:
			p.Add(key, "unknown field")
		}
	})
	if doc != nil {
		p.Add(doc.Name, doc.Problem)
	} else if !seenIDs {
		p.Add("part_ids", "required")
	}
	if err := p.Err(); err != nil {
		return err
	}
	st, err := a.uploads.Complete(r.Context(), c)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, a.viewUpload(r, st, false))
	return nil
}

// addUploadPart answers POST /api/v1/uploads/{id}/parts: one multipart
// part named "data", streamed to storage as it arrives. The part is
// recorded only once the whole form has been read and found sound, so a
// form refused after its data part keeps nothing.
func (a *API) addUploadPart(w http.ResponseWriter, r *http.Request, caller *keys.APIKey) error {
	maxPart := a.uploads.MaxPartBytes()
	if r.ContentLength > maxPart+multipartSlack {
		// Refused before reading, as an oversized upload is.
		return &files.PartTooLargeError{Limit: maxPart}
	}
	ref, err := uploadRef(r, caller)
	if err != nil {
		return err
	}
	mt, params, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if err != nil || mt != "multipart/form-data" || params["boundary"] == "" {
		return badRequest(map[string]any{"content_type": "must be multipart/form-data with a boundary"})
	}
	form := newPartForm(w, r, maxPart+multipartSlack, params["boundary"], a.bodyTimeout, a.minUploadRate)
	for {
		pr, name, err := form.next()
		if errors.Is(err, io.EOF) {
			return badRequest(map[string]any{"data": "required"})
		}
		if err != nil {
			return err
		}
		if name != "data" {
			if err := form.skip(pr); err != nil {
				return err
			}
			continue
		}
		got, err := a.uploads.AddPart(r.Context(), ref, pr, r.ContentLength, form.rest)
		if err != nil {
			if pr.err != nil {
				return malformed(form.body, pr.err)
			}
			return err
		}
		writeJSON(w, http.StatusOK, uploadPartObject{
			ID: got.ID, Object: "upload.part", CreatedAt: got.CreatedAt.Unix(), UploadID: got.UploadID,
		})
		return nil
	}
}

// partForm reads the multipart form of a part upload under the same
// bounds as POST /files: header sizes, part count, the fields beside the
// data, and the upload's pace.
type partForm struct {
	body       *bodyReader
	headers    *headerBudget
	mr         *multipart.Reader
	idle       *uploadPace
	boundary   int
	parts      int
	fieldBytes int64
}

func newPartForm(w http.ResponseWriter, r *http.Request, limit int64, boundary string, idle time.Duration, minRate int64) *partForm {
	body := newBodyReader(w, r, limit)
	headers := &headerBudget{r: uploadReader(body, r.ContentLength), left: -1}
	return &partForm{
		body: body, headers: headers, mr: multipart.NewReader(headers, boundary), boundary: len(boundary),
		idle: &uploadPace{clock: bodyClockOf(r), idle: idle, minRate: minRate, start: time.Now()},
	}
}

// next returns the next part and its form name; io.EOF after the last.
func (f *partForm) next() (*partReader, string, error) {
	f.idle.extend()
	f.headers.arm(maxPartHeaderBytes + 2*multipartPeek + f.boundary)
	part, err := f.mr.NextRawPart()
	f.headers.disarm()
	if f.headers.exceeded {
		return nil, "", badRequest(map[string]any{"body": "form part headers too long"})
	}
	if errors.Is(err, io.EOF) {
		return nil, "", io.EOF
	}
	if err != nil {
		return nil, "", malformed(f.body, err)
	}
	if f.parts++; f.parts > maxParts {
		return nil, "", badRequest(map[string]any{"body": "too many form parts"})
	}
	if headerBytes(part) > maxPartHeaderBytes {
		return nil, "", badRequest(map[string]any{"body": "form part headers too long"})
	}
	return &partReader{p: part, idle: f.idle}, part.FormName(), nil
}

// skip reads a field other than data and ignores it, within the fields'
// small budget.
func (f *partForm) skip(pr *partReader) error {
	n, err := io.Copy(io.Discard, io.LimitReader(pr, maxFieldBytes-f.fieldBytes+1))
	f.fieldBytes += n
	if err != nil {
		return malformed(f.body, err)
	}
	if f.fieldBytes > maxFieldBytes {
		return badRequest(map[string]any{"body": "form fields other than data are too large"})
	}
	return nil
}

// rest reads the form after its data part to its end: other fields are
// ignored, a second data part is refused.
func (f *partForm) rest() error {
	for {
		pr, name, err := f.next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		if name == "data" {
			return badRequest(map[string]any{"data": "only one data part is allowed"})
		}
		if err := f.skip(pr); err != nil {
			return err
		}
	}
}
