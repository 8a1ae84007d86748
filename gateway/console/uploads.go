package console

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/aigateway/gateway/client"
)

// The sizes the Files page works with when Options leave them out: the
// API's default limits.max_file_bytes, above which a file cannot go in one
// request, and the API's largest part of an upload in parts.
const (
	DefaultMaxFileBytes    = 100 << 20
	DefaultUploadPartBytes = 64 << 20
)

// uploadPurpose is the purpose of the files the console uploads, the one
// POST /files gives a file sent without one.
const uploadPurpose = "user_data"

// uploadSettings are what the page's script needs to send a file: above
// Single bytes it goes in parts of Part bytes.
type uploadSettings struct{ Single, Part int64 }

// The console's routes of an upload in parts follow the API's
// (POST /uploads, /uploads/{id}/parts, /complete, /cancel) and call it
// in process with the session's key, as the single upload does: the key
// never reaches the page, and the API's rules, limits and messages apply
// unchanged. The page's script calls them with fetch, the session's token
// in X-CSRF-Token, and reads JSON: the API's answer cut to what the page
// needs, or a refusal in the API's envelope with the console's words for
// it.

// createUpload starts an upload in parts: JSON {"bytes","filename",
// "mime_type"} from the page, answered {"id"}. The declared bytes are
// reserved against the workspace's quota at once, so a file that would
// not fit is refused before any of it is sent.
func (c *Console) createUpload(v *visit) error {
	var in struct {
		Bytes    int64  `json:"bytes"`
		Filename string `json:"filename"`
		MimeType string `json:"mime_type"`
	}
	if err := readStrict(v.r.Body, &in); err != nil {
		return c.uploadAnswer(v, nil, badInput{"The upload could not be started: the page sent a malformed request. Reload the page and try again."})
	}
	body, _ := json.Marshal(map[string]any{
		"bytes": in.Bytes, "filename": in.Filename, "purpose": uploadPurpose,
		// A browser that does not know the file's type says nothing; the
		// API then goes by the content alone.
		"mime_type": cmp.Or(in.MimeType, "application/octet-stream"),
	})
	var up struct {
		ID string `json:"id"`
	}
	err := c.callUploads(v, "", bytes.NewReader(body), int64(len(body)), "application/json", &up)
	return c.uploadAnswer(v, map[string]string{"id": up.ID}, err)
}

// uploadPart sends one part: the request's body is the part's bytes
// (a File.slice() of the page), streamed to the API as the multipart
// field data as it arrives, never held whole. Its length must be
// declared, so that the API refuses a part over its limit before a byte
// is read. The query's part and attempt are the page's numbering, so a
// log tells a part sent again from a new one; the API needs neither.
//
// Its route does not read the body to check the token (the body is the
// file's): the token must come in X-CSRF-Token.
func (c *Console) uploadPart(v *visit) error {
	if !sameToken(v.r.Header.Get("X-CSRF-Token"), v.sess.CSRF) {
		c.refuse(v.w, v.r, http.StatusForbidden, "This form has expired or did not come from this console. Reload the page and try again.")
		return nil
	}
	n := v.r.ContentLength
	if n <= 0 {
		return c.uploadAnswer(v, nil, badInput{"A part must be sent with its length, and may not be empty. Reload the page and try again."})
	}
	mw := multipart.NewWriter(io.Discard)
	head := fmt.Sprintf("--%s\r\nContent-Disposition: form-data; name=\"data\"; filename=\"part\"\r\nContent-Type: application/octet-stream\r\n\r\n", mw.Boundary())
	tail := "\r\n--" + mw.Boundary() + "--\r\n"
	body := io.MultiReader(bytes.NewReader([]byte(head)), io.LimitReader(v.r.Body, n), bytes.NewReader([]byte(tail)))
	var part struct {
		ID string `json:"id"`
	}
	err := c.callUploads(v, "/parts", body, int64(len(head))+n+int64(len(tail)), mw.FormDataContentType(), &part)
	return c.uploadAnswer(v, map[string]string{"id": part.ID}, err)
}

// completeUpload makes the file of the parts, in the order the page
// lists them: JSON {"part_ids":[…]}, answered as the single upload is
// ({"ok","message","location"}).
func (c *Console) completeUpload(v *visit) error {
	var in struct {
		PartIDs []string `json:"part_ids"`
	}
	if err := readStrict(v.r.Body, &in); err != nil {
		return c.uploadAnswer(v, nil, badInput{"The upload could not be finished: the page sent a malformed request. Reload the page and try again."})
	}
	if in.PartIDs == nil {
		in.PartIDs = []string{}
	}
	body, _ := json.Marshal(in)
	var up struct {
		File *client.File `json:"file"`
	}
	err := c.callUploads(v, "/complete", bytes.NewReader(body), int64(len(body)), "application/json", &up)
	if err == nil && up.File == nil {
		err = errors.New("console: a completed upload came without its file")
	}
	if err != nil {
		return c.uploadAnswer(v, nil, err)
	}
	back := withQuery("/console/files", url.Values{"workspace": {v.r.URL.Query().Get("workspace")}})
	return c.uploadAnswer(v, map[string]any{
		"ok": true, "location": back,
		"message": "Uploaded “" + up.File.Filename + "” (" + strconv.FormatInt(up.File.SizeBytes, 10) + " bytes).",
	}, nil)
}

// cancelUpload cancels an upload: the API removes its parts and gives
// its reservation back to the workspace. The page sends it from Cancel,
// after a failure, and as a beacon when it is closed mid-upload (a form
// with csrf, since a beacon carries no header of its own).
func (c *Console) cancelUpload(v *visit) error {
	var up struct {
		Status string `json:"status"`
	}
	err := c.callUploads(v, "/cancel", http.NoBody, 0, "", &up)
	return c.uploadAnswer(v, map[string]string{"status": up.Status}, err)
}

// maxUploadAnswer bounds what is read of the API's answer to an upload
// route: an Upload object with its File, or a part.
const maxUploadAnswer = 64 << 10

// callUploads calls the API's route of the upload named by the request's
// path (none: POST /uploads) with the session's key and the page's
// workspace, and decodes its answer into out. A refusal is *client.Error,
// as the API client returns it.
func (c *Console) callUploads(v *visit, route string, body io.Reader, length int64, contentType string, out any) error {
	path := apiBase + "/api/v1/uploads"
	if id := v.r.PathValue("id"); id != "" {
		path += "/" + url.PathEscape(id) + route
	}
	if ws := v.r.URL.Query().Get("workspace"); ws != "" {
		path += "?" + url.Values{"workspace_id": {ws}}.Encode()
	}
	req, err := http.NewRequestWithContext(v.ctx(), http.MethodPost, path, body)
	if err != nil {
		return err
	}
	req.ContentLength = length
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	req.Header.Set("Authorization", "Bearer "+v.sess.Key)
	req.Header.Set("User-Agent", "gateway-console/1")
	if id := client.RequestIDFrom(v.r.Context()); id != "" {
		req.Header.Set("X-Request-Id", id)
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	answer, err := io.ReadAll(io.LimitReader(resp.Body, maxUploadAnswer))
	if err != nil {
		return err
	}
	if resp.StatusCode >= 400 {
		return refusalOfAPI(resp, answer)
	}
	return json.Unmarshal(answer, out)
}

// refusalOfAPI reads the API's envelope as the API client does.
func refusalOfAPI(resp *http.Response, body []byte) *client.Error {
	e := &client.Error{StatusCode: resp.StatusCode, Message: http.StatusText(resp.StatusCode), RequestID: resp.Header.Get("X-Request-Id")}
	if s, err := strconv.Atoi(resp.Header.Get("Retry-After")); err == nil && s > 0 {
		e.RetryAfter = time.Duration(s) * time.Second
	}
	var env struct {
		Error *struct {
			Message  string         `json:"message"`
			Metadata map[string]any `json:"metadata"`
		} `json:"error"`
	}
	if json.Unmarshal(body, &env) == nil && env.Error != nil {
		e.Message = cmp.Or(env.Error.Message, e.Message)
		e.Metadata = env.Error.Metadata
	}
	return e
}

// readStrict decodes a small JSON body, refusing unknown fields and
// trailing data.
func readStrict(r io.Reader, v any) error {
	dec := json.NewDecoder(r)
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if dec.More() {
		return errors.New("trailing data")
	}
	return nil
}

// uploadAnswer answers a route of an upload in parts: ok as JSON, or the
// refusal in the API's envelope, its message in the console's words.
// A key that stopped working ends the session, as on every page. An
// answer given before the browser finished sending (a part refused from
// its declared length) is sent first, then the rest of the body is read
// and dropped, bounded, as the single upload does: browsers send the
// whole body before they read an answer, and would otherwise see a broken
// connection and send the part again.
func (c *Console) uploadAnswer(v *visit, ok any, err error) error {
	var apiErr *client.Error
	status, msg := http.StatusOK, ""
	switch {
	case err == nil:
	case errors.As(err, &apiErr):
		status, msg = apiErr.StatusCode, apiMessage(apiErr)
		if apiErr.StatusCode == http.StatusUnauthorized {
			c.cookies.clear(v.w, v.r, sessionCookie)
			msg = "Your session has ended: the key no longer works. Sign in again."
		}
		if apiErr.RetryAfter > 0 {
			v.w.Header().Set("Retry-After", strconv.Itoa(int(apiErr.RetryAfter.Seconds())))
		}
	case errors.As(err, &badInput{}):
		status, msg = http.StatusBadRequest, err.Error()
	case v.r.Context().Err() != nil:
		// The browser went away mid-part: nothing can be answered, and a
		// status line would claim an answer (the API aborts its own the
		// same way; the access log says 499).
		panic(http.ErrAbortHandler)
	default:
		return err
	}
	if err != nil {
		rc := http.NewResponseController(v.w)
		if rc.EnableFullDuplex() == nil {
			v.w.Header().Set("Connection", "close")
			defer func() {
				_ = rc.Flush()
				_ = rc.SetReadDeadline(time.Now().Add(30 * time.Second))
				_, _ = io.CopyN(io.Discard, v.r.Body, c.partBytes+1<<20)
			}()
		}
		ok = map[string]any{"error": map[string]any{"code": status, "message": msg}}
	}
	v.w.Header().Set("Content-Type", "application/json")
	v.w.Header().Set("Cache-Control", "no-store")
	v.w.WriteHeader(status)
	return json.NewEncoder(v.w).Encode(ok)
}
