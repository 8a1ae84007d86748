package console

import (
	"encoding/json"
	"errors"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/aigateway/gateway/client"
)

// filesPerPage is the page size of the file list. The API pages by a
// keyset cursor, so a page costs the same however many files there are.
const filesPerPage = 50

type filesData struct {
	Files      []client.File
	Workspaces []workspaceChoice
	Workspace  string
	// Next is the link of the next page; First is set on a later page.
	Next, First string
}

func (c *Console) files(v *visit) error {
	ws, choices, err := v.pickWorkspace()
	if err != nil {
		return err
	}
	var opts []client.FileOption
	if ws != "" {
		opts = append(opts, client.InWorkspace(ws))
	}
	cursor := v.r.URL.Query().Get("cursor")
	page, err := v.api.ListFiles(v.ctx(), filesPerPage, cursor, opts...)
	if err != nil {
		return err
	}
	d := filesData{Files: page.Files, Workspaces: choices, Workspace: ws}
	if page.Cursor != nil && *page.Cursor != "" {
		d.Next = withQuery("/console/files", url.Values{"workspace": {ws}, "cursor": {*page.Cursor}})
	}
	if cursor != "" {
		d.First = withQuery("/console/files", url.Values{"workspace": {ws}})
	}
	return v.show("files", "Files", "files", d)
}

// uploadFile streams a file from the browser to the API's POST /files: the
// browser's multipart body is read part by part and the file part is
// passed on as it arrives, so nothing is buffered whole, and the API's own
// limits (size 413, quota 403, rate 429) apply and are shown in its words.
//
// The form's parts must come in order: csrf (the session's token), size
// (optional, the file's length, which lets the API refuse an oversized
// file before its bytes), then file. The console's script sends them so;
// a plain form without script sends csrf and file.
//
// The script asks for JSON (Accept: application/json) and shows the
// outcome itself; a plain form gets the usual redirect.
func (c *Console) uploadFile(v *visit) error {
	ws := v.r.URL.Query().Get("workspace")
	back := withQuery("/console/files", url.Values{"workspace": {ws}})
	mr, err := v.r.MultipartReader()
	if err != nil {
		return c.uploadDone(v, back, nil, badInput{"The upload was not a file form. Choose a file and send the form again."})
	}
	part, err := mr.NextPart()
	if err != nil || part.FormName() != "csrf" || !sameToken(readSmall(part), v.sess.CSRF) {
		c.refuse(v.w, v.r, http.StatusForbidden, "This form has expired or did not come from this console. Reload the page and try again.")
		return nil
	}
	size := int64(client.UnknownSize)
	for {
		part, err = mr.NextPart()
		if err != nil || part.FormName() != "size" {
			break
		}
		if n, perr := strconv.ParseInt(readSmall(part), 10, 64); perr == nil && n >= 0 {
			size = n
		}
	}
	if err != nil || part.FormName() != "file" || part.FileName() == "" {
		return c.uploadDone(v, back, nil, badInput{"Choose a file to upload."})
	}
	var opts []client.FileOption
	if ws != "" {
		opts = append(opts, client.InWorkspace(ws))
	}
	f, err := v.api.UploadFile(v.ctx(), client.Upload{
		Filename: part.FileName(), Content: part, Size: size, ContentType: part.Header.Get("Content-Type"),
	}, opts...)
	return c.uploadDone(v, back, f, err)
}

// readSmall reads a short form field.
func readSmall(p *multipart.Part) string {
	b, _ := io.ReadAll(io.LimitReader(p, 256))
	return strings.TrimSpace(string(b))
}

// uploadDone answers an upload. When it failed while the browser was
// still sending, the answer goes out first (full duplex) and then the rest
// of the body is read and dropped, bounded, before the connection closes:
// browsers send their whole body before they read an answer, and would
// otherwise report a broken connection instead of the API's message.
func (c *Console) uploadDone(v *visit, back string, f *client.File, err error) error {
	var apiErr *client.Error
	if errors.As(err, &apiErr) && apiErr.StatusCode == http.StatusUnauthorized {
		return err
	}
	if err != nil && !errors.As(err, &apiErr) && !errors.As(err, &badInput{}) && !errors.Is(err, client.ErrSizeMismatch) {
		return err
	}
	rc := http.NewResponseController(v.w)
	if err != nil && rc.EnableFullDuplex() == nil {
		v.w.Header().Set("Connection", "close")
		defer func() {
			_ = rc.Flush()
			_ = rc.SetReadDeadline(time.Now().Add(30 * time.Second))
			_, _ = io.CopyN(io.Discard, v.r.Body, 128<<20)
		}()
	}
	msg := ""
	switch {
	case err == nil:
		msg = "Uploaded “" + f.Filename + "” (" + strconv.FormatInt(f.SizeBytes, 10) + " bytes)."
	case apiErr != nil:
		msg = apiMessage(apiErr)
	case errors.Is(err, client.ErrSizeMismatch):
		msg = "The file changed while it was being sent. Try again."
	default:
		msg = err.Error()
	}
	if strings.Contains(v.r.Header.Get("Accept"), "application/json") {
		status := http.StatusOK
		switch {
		case apiErr != nil:
			status = apiErr.StatusCode
		case err != nil:
			status = http.StatusBadRequest
		}
		v.w.Header().Set("Content-Type", "application/json")
		v.w.Header().Set("Cache-Control", "no-store")
		v.w.WriteHeader(status)
		return json.NewEncoder(v.w).Encode(struct {
			OK       bool   `json:"ok"`
			Message  string `json:"message"`
			Location string `json:"location"`
		}{err == nil, msg, back})
	}
	if err == nil {
		v.c.setFlash(v.w, v.r, "ok", msg)
	} else {
		v.c.setFlash(v.w, v.r, "error", msg)
	}
	http.Redirect(v.w, v.r, back, http.StatusSeeOther)
	return nil
}

// downloadFile streams a file's bytes from the API to the browser. The
// bytes are the user's own and could be anything, HTML included: they are
// always sent as an attachment of an opaque type, in a sandbox, so they
// never run as a page of the console.
func (c *Console) downloadFile(v *visit) error {
	var opts []client.FileOption
	if ws := v.r.URL.Query().Get("workspace"); ws != "" {
		opts = append(opts, client.InWorkspace(ws))
	}
	content, err := v.api.FileContent(v.ctx(), v.r.PathValue("id"), nil, opts...)
	if err != nil {
		return err
	}
	defer content.Close()
	h := v.w.Header()
	h.Set("Content-Type", "application/octet-stream")
	h.Set("Content-Security-Policy", "sandbox; default-src 'none'")
	h.Set("Cache-Control", "no-store")
	name := content.Filename
	if name == "" {
		name = "download"
	}
	h.Set("Content-Disposition", mime.FormatMediaType("attachment", map[string]string{"filename": name}))
	if content.Length >= 0 {
		h.Set("Content-Length", strconv.FormatInt(content.Length, 10))
	}
	v.w.WriteHeader(http.StatusOK)
	_, err = io.Copy(v.w, content)
	if err != nil {
		c.log.Warn("console: download ended early", "err", err)
	}
	return nil
}

func (c *Console) deleteFile(v *visit) error {
	ws := v.r.URL.Query().Get("workspace")
	var opts []client.FileOption
	if ws != "" {
		opts = append(opts, client.InWorkspace(ws))
	}
	back := withQuery("/console/files", url.Values{"workspace": {ws}})
	return v.done(back, "File deleted.", v.api.DeleteFile(v.ctx(), v.r.PathValue("id"), opts...))
}
