package providers

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/textproto"
	"net/url"
	"slices"
	"time"

	"github.com/aigateway/gateway/files"
	"github.com/aigateway/gateway/policy/keys/seal"
	"go.uber.org/zap"
)

// ErrNoUploads: the provider has no Uploads resource (Anthropic). Nothing
// was sent.
var ErrNoUploads = errors.New("byok: the provider has no uploads resource")

// UploadRequest starts an upload in parts at the provider: OpenAI's
// POST /uploads.
type UploadRequest struct {
	Bytes    int64
	Filename string
	MimeType string
	Purpose  string
}

// Upload is the provider's Upload object.
type Upload struct {
	ID        string
	Status    string // pending, completed, cancelled, expired
	Bytes     int64
	CreatedAt time.Time
	ExpiresAt time.Time
	// File is the file made at completion; nil before.
	File      *files.ProviderFileInfo
	RequestID string
}

// UploadPart is the provider's Upload Part object.
type UploadPart struct {
	ID        string
	UploadID  string
	CreatedAt time.Time
	RequestID string
}

// Uploader is a provider's Uploads resource: a file sent in parts, joined
// by the provider at completion. Client implements it for OpenAI; for
// Anthropic every call is ErrNoUploads. Errors are those of
// Provider.Upload: a *ProviderError for a refusal, a failure or no answer
// (a 429's Retry-After in it), a part's reader's own error wrapped, the
// caller's context error wrapped. An upload id that is not one a provider
// issues is ErrInvalidFileID, and nothing is sent.
type Uploader interface {
	// CreateUpload makes a pending upload of r.Bytes bytes.
	CreateUpload(ctx context.Context, key seal.Secret, r UploadRequest) (Upload, error)
	// AddUploadPart streams data, read once to EOF, as one part of the
	// upload. Memory use is a small fixed buffer whatever the size; it
	// returns only once it has stopped reading data.
	AddUploadPart(ctx context.Context, key seal.Secret, uploadID string, data io.Reader) (UploadPart, error)
	// CompleteUpload joins partIDs, in that order, into the upload's file;
	// md5 (hex), when not empty, must match the joined bytes. The answer's
	// File is set.
	CompleteUpload(ctx context.Context, key seal.Secret, uploadID string, partIDs []string, md5 string) (Upload, error)
	// CancelUpload cancels a pending upload; the provider drops its parts.
	CancelUpload(ctx context.Context, key seal.Secret, uploadID string) (Upload, error)
}

var _ Uploader = (*Client)(nil)

// uploadsURL is the Uploads resource's endpoint followed by path.
func (c *Client) uploadsURL(path string) *url.URL {
	u := c.uploadsBase
	u.Path += path
	if u.RawPath != "" {
		u.RawPath += path
	}
	return &u
}

// CreateUpload implements Uploader.
func (c *Client) CreateUpload(ctx context.Context, key seal.Secret, r UploadRequest) (Upload, error) {
	if !c.d.uploads {
		return Upload{}, fmt.Errorf("byok: %s create upload: %w", c.d.name, ErrNoUploads)
	}
	body, err := json.Marshal(map[string]any{
		"bytes": r.Bytes, "filename": r.Filename, "mime_type": r.MimeType, "purpose": r.Purpose,
	})
	if err != nil {
		return Upload{}, fmt.Errorf("byok: %s create upload: %w", c.d.name, err)
	}
	up, err := c.uploadCall(ctx, "create upload", "", key, body)
	if err == nil && up.Status != "pending" {
		err = c.unreadableUpload("create upload", up, errors.New("a new upload is not pending"))
	}
	return up, err
}

// CompleteUpload implements Uploader.
func (c *Client) CompleteUpload(ctx context.Context, key seal.Secret, uploadID string, partIDs []string, md5 string) (Upload, error) {
	if err := c.checkUpload("complete upload", uploadID); err != nil {
		return Upload{}, err
	}
	req := map[string]any{"part_ids": partIDs}
	if md5 != "" {
		req["md5"] = md5
	}
	body, err := json.Marshal(req)
	if err != nil {
		return Upload{}, fmt.Errorf("byok: %s complete upload: %w", c.d.name, err)
	}
	up, err := c.uploadCall(ctx, "complete upload", "/"+uploadID+"/complete", key, body)
	if err == nil && (up.Status != "completed" || up.File == nil || up.ID != uploadID) {
		// The provider may hold a file we cannot name: say so loudly.
		err = c.unreadableUpload("complete upload", up, errors.New("answer is not the completed upload with its file"))
	}
	return up, err
}

// CancelUpload implements Uploader.
func (c *Client) CancelUpload(ctx context.Context, key seal.Secret, uploadID string) (Upload, error) {
	if err := c.checkUpload("cancel upload", uploadID); err != nil {
		return Upload{}, err
	}
	up, err := c.uploadCall(ctx, "cancel upload", "/"+uploadID+"/cancel", key, nil)
	if err == nil && up.ID != uploadID {
		err = c.unreadableUpload("cancel upload", up, errors.New("answer describes another upload"))
	}
	return up, err
}

func (c *Client) checkUpload(op, uploadID string) error {
	if !c.d.uploads {
		return fmt.Errorf("byok: %s %s: %w", c.d.name, op, ErrNoUploads)
	}
	if err := checkFileID(uploadID); err != nil {
		return fmt.Errorf("byok: %s %s: %w", c.d.name, op, err)
	}
	return nil
}

func (c *Client) unreadableUpload(op string, up Upload, err error) error {
	c.log.Warn("provider answer unreadable", zap.String("op", op), zap.String("upload_id", up.ID),
		zap.String("request_id", up.RequestID), zap.Error(err))
	return &ProviderError{Provider: c.d.name, Op: op, Status: http.StatusOK, RequestID: up.RequestID, Err: err}
}

// uploadCall POSTs body (JSON; nil sends none) to the Uploads resource and
// reads an Upload object from the answer.
func (c *Client) uploadCall(ctx context.Context, op, path string, key seal.Secret, body []byte) (Upload, error) {
	var up Upload
	resp, err := c.post(ctx, op, c.uploadsURL(path), key, "application/json", body, func(answer []byte) (err error) {
		up, err = decodeOpenAIUpload(answer)
		return err
	})
	if err != nil {
		return Upload{}, err
	}
	up.RequestID = c.requestID(resp, "")
	c.log.Debug("provider upload "+op, zap.String("upload_id", up.ID), zap.String("status", up.Status),
		zap.String("request_id", up.RequestID))
	return up, nil
}

// post sends a small body (nil: none) and hands a 2xx answer's JSON to
// decode. Errors as send's, an unreadable answer a *ProviderError.
func (c *Client) post(ctx context.Context, op string, u *url.URL, key seal.Secret, ctype string, body []byte, decode func([]byte) error) (*http.Response, error) {
	if err := checkKey(key); err != nil {
		return nil, err
	}
	parent := ctx
	ctx, cancel := c.withTimeout(ctx)
	defer cancel()
	var r io.Reader = http.NoBody
	if body != nil {
		r = bytes.NewReader(body)
	}
	req, err := c.request(ctx, http.MethodPost, u, key, acceptJSON, r)
	if err != nil {
		return nil, fmt.Errorf("byok: %s %s: %w", c.d.name, op, err)
	}
	if body != nil {
		req.ContentLength = int64(len(body))
		req.Header["Content-Type"] = []string{ctype}
	}
	return c.exchange(parent, op, req, key, nil, decode)
}

// exchange sends req and reads its answer, at most maxAnswerBytes: a
// non-2xx one is answerError's, a 2xx one goes to decode. body, when set,
// is req's body, finished once the answer is in: the failure of the
// caller's reader inside it is the cause, whatever the transport made of
// the request it cut short.
func (c *Client) exchange(parent context.Context, op string, req *http.Request, key seal.Secret, body *formBody, decode func([]byte) error) (*http.Response, error) {
	resp, err := c.http.Do(req)
	var answer []byte
	if err == nil {
		answer, err = io.ReadAll(io.LimitReader(resp.Body, maxAnswerBytes+1))
		resp.Body.Close()
	}
	if body != nil {
		if ferr := body.finish(); ferr != nil {
			return nil, fmt.Errorf("byok: %s %s: reading the part: %w", c.d.name, op, ferr)
		}
	}
	if err != nil {
		return nil, c.transportError(op, parent, resp, err)
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return nil, c.answerError(op, resp, answer, key)
	}
	if len(answer) > maxAnswerBytes {
		return nil, c.unreadable(op, resp, fmt.Errorf("answer larger than %d bytes", maxAnswerBytes))
	}
	if err := decode(answer); err != nil {
		return nil, c.unreadable(op, resp, err)
	}
	return resp, nil
}

// AddUploadPart implements Uploader. The part goes out as
// multipart/form-data with chunked encoding while data is read, as
// Upload's file does; when data fails, the request is aborted
// mid-body, so the provider keeps no part, and data's error is returned.
func (c *Client) AddUploadPart(ctx context.Context, key seal.Secret, uploadID string, data io.Reader) (UploadPart, error) {
	const op = "upload part"
	if err := c.checkUpload(op, uploadID); err != nil {
		return UploadPart{}, err
	}
	if err := checkKey(key); err != nil {
		return UploadPart{}, err
	}
	if data == nil {
		return UploadPart{}, fmt.Errorf("%w: no body", ErrInvalidFile)
	}
	parent := ctx
	ctx, cancel := c.withTimeout(ctx)
	defer cancel()

	h := make(textproto.MIMEHeader)
	h.Set("Content-Disposition", `form-data; name="data"; filename="blob"`)
	h.Set("Content-Type", "application/octet-stream")
	body, err := newFormBody(nil, h, data)
	if err != nil {
		return UploadPart{}, fmt.Errorf("byok: %s %s: %w", c.d.name, op, err)
	}
	req, err := c.request(ctx, http.MethodPost, c.uploadsURL("/"+uploadID+"/parts"), key, acceptJSON, body)
	if err != nil {
		return UploadPart{}, fmt.Errorf("byok: %s %s: %w", c.d.name, op, err)
	}
	req.ContentLength = -1
	req.Header["Content-Type"] = []string{body.ContentType()}

	var part UploadPart
	resp, err := c.exchange(parent, op, req, key, body, func(answer []byte) (err error) {
		part, err = decodeOpenAIUploadPart(answer)
		if err == nil && part.UploadID != uploadID {
			err = errors.New("answer is a part of another upload")
		}
		return err
	})
	if err != nil {
		return UploadPart{}, err
	}
	part.RequestID = c.requestID(resp, "")
	c.log.Debug("provider upload part stored", zap.String("upload_id", uploadID), zap.String("part_id", part.ID),
		zap.String("request_id", part.RequestID))
	return part, nil
}

// openAIUpload is OpenAI's Upload object; other members are ignored.
type openAIUpload struct {
	ID        string            `json:"id"`
	Object    string            `json:"object"`
	Bytes     int64             `json:"bytes"`
	CreatedAt int64             `json:"created_at"`
	ExpiresAt int64             `json:"expires_at"`
	Status    string            `json:"status"`
	File      *openAIUploadFile `json:"file"`
}

// openAIUploadFile is the File object of a completed upload.
type openAIUploadFile struct {
	ID        string `json:"id"`
	Object    string `json:"object"`
	Bytes     *int64 `json:"bytes"`
	CreatedAt int64  `json:"created_at"`
	Filename  string `json:"filename"`
	Purpose   string `json:"purpose"`
}

var openAIUploadStatuses = []string{"pending", "completed", "cancelled", "expired"}

func decodeOpenAIUpload(body []byte) (Upload, error) {
	var u openAIUpload
	if err := json.Unmarshal(body, &u); err != nil {
		return Upload{}, fmt.Errorf("decoding upload object: %w", err)
	}
	if u.Object != "upload" || checkFileID(u.ID) != nil || !slices.Contains(openAIUploadStatuses, u.Status) {
		return Upload{}, errors.New("answer is not an upload object")
	}
	up := Upload{
		ID: u.ID, Status: u.Status, Bytes: u.Bytes,
		CreatedAt: time.Unix(u.CreatedAt, 0).UTC(), ExpiresAt: time.Unix(u.ExpiresAt, 0).UTC(),
	}
	if f := u.File; f != nil {
		if f.Object != "file" || checkFileID(f.ID) != nil || f.Bytes == nil {
			return Upload{}, errors.New("the upload's file is not a file object")
		}
		up.File = &files.ProviderFileInfo{
			ID: f.ID, Filename: f.Filename, Size: *f.Bytes, CreatedAt: time.Unix(f.CreatedAt, 0).UTC(),
			Purpose: f.Purpose, Downloadable: !slices.Contains(openAIUndownloadable, f.Purpose),
		}
	}
	return up, nil
}

func decodeOpenAIUploadPart(body []byte) (UploadPart, error) {
	var p struct {
		ID        string `json:"id"`
		Object    string `json:"object"`
		CreatedAt int64  `json:"created_at"`
		UploadID  string `json:"upload_id"`
	}
	if err := json.Unmarshal(body, &p); err != nil {
		return UploadPart{}, fmt.Errorf("decoding upload part: %w", err)
	}
	if p.Object != "upload.part" || checkFileID(p.ID) != nil {
		return UploadPart{}, errors.New("answer is not an upload part object")
	}
	return UploadPart{ID: p.ID, UploadID: p.UploadID, CreatedAt: time.Unix(p.CreatedAt, 0).UTC()}, nil
}
