package console

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"mime"
	"mime/multipart"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/aigateway/gateway/client"
	"golang.org/x/sync/errgroup"
)

// filesPerPage is the page size of the file list unless the person picks
// another of filePageSizes. The API pages by a keyset cursor, so a page
// costs the same however many files there are.
const filesPerPage = 50

// filePageSizes are the page sizes offered: big pages make emptying a
// workspace a few "select all" steps rather than dozens.
var filePageSizes = []int{50, 100, 200}

// maxBulkDelete bounds the files one bulk delete takes: the biggest page.
const maxBulkDelete = 200

// bulkDeleteWorkers is how many deletes of a bulk delete run at once: the
// storage's round trips overlap, and the key's rate limit, which counts
// each delete, is met in order rather than by a burst.
const bulkDeleteWorkers = 4

// serviceRole is the API's role of the other gateway components' keys,
// which may always read a file's bytes (README, "Service keys").
const serviceRole = "service"

// The query parameters of the file list that say which page it shows;
// every link and form of the page carries them, so that an action comes
// back to the page it was started from.
var filePageParams = []string{"workspace", "cursor", "before", "after", "per"}

type filesData struct {
	Files      []fileRow
	Workspaces []workspaceChoice
	Workspace  string
	// Shown says how many files the page lists. The API gives no total:
	// counting a workspace's files on every view is the cost keyset paging
	// avoids.
	Shown string
	// DownloadHint is set when some file has no Download link, to say once
	// why and how an operator turns downloads on.
	DownloadHint bool
	// Notice is a problem of the request itself, shown above the list.
	Notice string
	// Newest, Newer and Older are the pager's links; empty: none.
	Newest, Newer, Older string
	// Sizes are the page sizes to pick, as links.
	Sizes []pageSize
	// Here is the page's own position (workspace, cursor, page size) as
	// hidden fields of the bulk form, and BulkAction where that form's
	// confirmation posts.
	Here       []hiddenField
	BulkAction string
	// Confirm is set on the bulk delete's confirmation page.
	Confirm *bulkConfirm
	// Upload says how the page's script sends a file.
	Upload uploadSettings
}

// fileRow is a file of the list with its links.
type fileRow struct {
	client.File
	// Download is the link to the file's bytes; empty when the signed-in
	// key may not read them.
	Download string
	// Delete is where its delete form posts.
	Delete string
}

type pageSize struct {
	N       int
	URL     string
	Current bool
}

type hiddenField struct{ Name, Value string }

// bulkConfirm is what a bulk delete will delete, asked before it does.
type bulkConfirm struct {
	IDs []string
	// Files are the selected files the page lists; Unlisted the selected
	// ids it no longer lists (deleted or moved meanwhile), shown by id.
	Files    []client.File
	Unlisted []string
	Action   string
	Back     string
}

// files lists a page of the workspace's files, newest first. With do=delete
// it is the bulk delete's confirmation page for the files selected
// (file=<id>, repeated), which posts to deleteSelected.
func (c *Console) files(v *visit) error {
	ws, choices, err := v.pickWorkspace()
	if err != nil {
		return err
	}
	q := v.r.URL.Query()
	per, err := filePageSize(q.Get("per"))
	if err != nil {
		return err
	}
	here := filePageHere(q)
	if ws != "" {
		here.Set("workspace", ws)
	}
	opts, backward := filePageOptions(here)
	page, err := v.api.ListFiles(v.ctx(), per, here.Get("cursor"), opts...)
	if err != nil {
		return err
	}
	d := filesData{Workspaces: choices, Workspace: ws, Shown: filesShown(len(page.Files)),
		BulkAction: withQuery("/console/files/delete", clone(here)), Here: hiddenFields(here),
		Upload: uploadSettings{Single: c.maxFileBytes, Part: c.partBytes}}
	d.Files, d.DownloadHint = fileRows(page.Files, here, v.me.Role == serviceRole)
	d.Newest, d.Newer, d.Older = filePager(here, page, backward)
	if d.Newest != "" || d.Older != "" || per != filesPerPage {
		// One page of a few files needs no choice of size.
		d.Sizes = pageSizes(here, per)
	}
	if q.Get("do") != "delete" {
		return v.show("files", "Files", "files", d)
	}
	ids, err := selectedFiles(q["file"])
	if err != nil {
		return err
	}
	if len(ids) == 0 {
		d.Notice = "Select the files to delete first: tick the box of each, or “Select all on this page”."
		return v.show("files", "Files", "files", d)
	}
	d.Confirm = confirmation(ids, page.Files, d.BulkAction, withQuery("/console/files", clone(here)))
	return v.show("files", deleteTitle(len(ids)), "files", d)
}

// fileRows are the rows of files, with their links; hint reports a file
// without a Download link. Every key may download where the deployment
// makes uploads downloadable, service keys always (the API's rule, which
// each File carries as downloadable).
func fileRows(files []client.File, here url.Values, service bool) (rows []fileRow, hint bool) {
	content := url.Values{"workspace": {here.Get("workspace")}}
	for _, f := range files {
		path := "/console/files/" + url.PathEscape(f.ID)
		row := fileRow{File: f, Delete: withQuery(path+"/delete", clone(here))}
		if service || f.Downloadable {
			row.Download = withQuery(path+"/content", clone(content))
		} else {
			hint = true
		}
		rows = append(rows, row)
	}
	return rows, hint
}

// pageSizes links the page sizes offered, at the same place of the list.
func pageSizes(here url.Values, current int) []pageSize {
	var out []pageSize
	for _, n := range filePageSizes {
		at := clone(here)
		at.Set("per", strconv.Itoa(n))
		if n == filesPerPage {
			at.Del("per")
		}
		out = append(out, pageSize{N: n, URL: withQuery("/console/files", at), Current: n == current})
	}
	return out
}

// hiddenFields are the page's position as the bulk form's fields, so that
// its confirmation shows the same page.
func hiddenFields(here url.Values) []hiddenField {
	var out []hiddenField
	for _, name := range filePageParams {
		if value := here.Get(name); value != "" {
			out = append(out, hiddenField{name, value})
		}
	}
	return out
}

// filePageSize reads the page size: empty is the default, anything else
// must be one of those offered.
func filePageSize(s string) (int, error) {
	if s == "" {
		return filesPerPage, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || !slices.Contains(filePageSizes, n) {
		return 0, &client.Error{StatusCode: http.StatusBadRequest, Message: "Show 50, 100 or 200 files a page (per)"}
	}
	return n, nil
}

// filePageHere is the page's position from its query, nothing else.
func filePageHere(q url.Values) url.Values {
	here := url.Values{}
	for _, name := range filePageParams {
		if value := q.Get(name); value != "" {
			here.Set(name, value)
		}
	}
	return here
}

// filePageOptions turns the page's position into the API's: cursor goes
// on as it is (forward, older files), before asks for the files just newer
// than a file and after for those just older; the API refuses more than
// one in its words. backward reports a page read from before.
func filePageOptions(here url.Values) (opts []client.FileOption, backward bool) {
	if ws := here.Get("workspace"); ws != "" {
		opts = append(opts, client.InWorkspace(ws))
	}
	if id := here.Get("before"); id != "" {
		opts = append(opts, func(q url.Values) { q.Set("before_id", id) })
		backward = true
	}
	if id := here.Get("after"); id != "" {
		opts = append(opts, func(q url.Values) { q.Set("after_id", id) })
	}
	return opts, backward
}

// filePager links the pages around this one. Going older continues with
// the API's cursor; going newer asks for the files just newer than the
// first shown (the API's before_id), whose answer says whether there are
// newer still. A page read backwards goes older from its last file.
func filePager(here url.Values, page *client.FilePage, backward bool) (newest, newer, older string) {
	moved := here.Get("cursor") != "" || here.Get("before") != "" || here.Get("after") != ""
	at := func(param, value string) string {
		q := clone(here)
		for _, p := range []string{"cursor", "before", "after"} {
			q.Del(p)
		}
		q.Set(param, value)
		return withQuery("/console/files", q)
	}
	if moved {
		first := clone(here)
		for _, p := range []string{"cursor", "before", "after"} {
			first.Del(p)
		}
		newest = withQuery("/console/files", first)
	}
	files := page.Files
	if len(files) == 0 {
		return newest, "", ""
	}
	if backward {
		if page.HasMore {
			newer = at("before", files[0].ID)
		}
		return newest, newer, at("after", files[len(files)-1].ID)
	}
	if moved {
		newer = at("before", files[0].ID)
	}
	if page.Cursor != nil && *page.Cursor != "" {
		older = at("cursor", *page.Cursor)
	}
	return newest, newer, older
}

// filesShown is the page's count, in words.
func filesShown(n int) string {
	if n == 1 {
		return "1 file shown"
	}
	return strconv.Itoa(n) + " files shown"
}

// selectedFiles are the ids a bulk delete names, each once, in order.
func selectedFiles(ids []string) ([]string, error) {
	out := make([]string, 0, len(ids))
	seen := make(map[string]bool, len(ids))
	for _, id := range ids {
		if id = strings.TrimSpace(id); id != "" && !seen[id] {
			seen[id] = true
			out = append(out, id)
		}
	}
	if len(out) > maxBulkDelete {
		return nil, &client.Error{StatusCode: http.StatusBadRequest,
			Message: fmt.Sprintf("Select at most %d files at a time (%d were selected)", maxBulkDelete, len(out))}
	}
	return out, nil
}

// confirmation names what a bulk delete of ids will delete, by the names
// the page lists.
func confirmation(ids []string, listed []client.File, action, back string) *bulkConfirm {
	byID := make(map[string]client.File, len(listed))
	for _, f := range listed {
		byID[f.ID] = f
	}
	c := &bulkConfirm{IDs: ids, Action: action, Back: back}
	for _, id := range ids {
		if f, ok := byID[id]; ok {
			c.Files = append(c.Files, f)
		} else {
			c.Unlisted = append(c.Unlisted, id)
		}
	}
	return c
}

func deleteTitle(n int) string {
	if n == 1 {
		return "Delete 1 file?"
	}
	return fmt.Sprintf("Delete %d files?", n)
}

func clone(q url.Values) url.Values { return maps.Clone(q) }

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
	content := &formReader{r: part}
	f, err := v.api.UploadFile(v.ctx(), client.Upload{
		Filename: part.FileName(), Content: content, Size: size, ContentType: part.Header.Get("Content-Type"),
	}, opts...)
	if err != nil && content.err != nil {
		err = formBroken(v.r, content.err)
	}
	return c.uploadDone(v, back, f, err)
}

// formReader is the browser's file part as the API's client reads it,
// remembering the first error of that read. UploadFile returns once the
// part is no longer read, so err is settled when it returns.
type formReader struct {
	r   io.Reader
	err error
}

func (f *formReader) Read(p []byte) (int, error) {
	n, err := f.r.Read(p)
	if err != nil && err != io.EOF && f.err == nil {
		f.err = err
	}
	return n, err
}

// formBroken is the answer to an upload whose browser form broke before
// the file ended, whatever the API made of the cut it saw: a body that
// stopped arriving is the API's 408; a browser that went away is the read's
// own error, which fail answers as every visit whose browser left (the
// handler aborts, as the API does); else the form itself is malformed (a
// missing closing boundary, say), which is the browser's 400 and not a
// fault of the server.
func formBroken(r *http.Request, readErr error) error {
	switch {
	case errors.Is(readErr, os.ErrDeadlineExceeded):
		return &client.Error{StatusCode: http.StatusRequestTimeout, Message: "the file stopped arriving, so no file was stored. Send it again"}
	case r.Context().Err() != nil:
		return readErr
	default:
		return badInput{"The upload arrived incomplete or malformed, so no file was stored. Send the file again."}
	}
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
	// Once the request's context has ended, net/http has stopped reading
	// the connection (a read failed or timed out): there is nothing left
	// to drain, and waiting for a stalled browser would hold the handler.
	if err != nil && v.r.Context().Err() == nil && rc.EnableFullDuplex() == nil {
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
	case errors.Is(err, client.ErrSizeMismatch):
		// Before the API's refusal, which it comes with: the API saw a
		// form left unclosed, and the cause is the file's new length.
		msg = "The file changed while it was being sent. Try again."
	case apiErr != nil:
		msg = apiMessage(apiErr)
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
	here := filePageHere(v.r.URL.Query())
	opts, _ := filePageOptions(url.Values{"workspace": {here.Get("workspace")}})
	back := withQuery("/console/files", here)
	return v.done(back, "File deleted.", v.api.DeleteFile(v.ctx(), v.r.PathValue("id"), opts...))
}

// maxBulkForm bounds the bulk delete's form: maxBulkDelete ids of at most
// 128 bytes each, and the token.
const maxBulkForm = 64 << 10

// deleteSelected deletes the files a bulk delete's confirmation names
// (file=<id>, repeated) and goes back to the page it came from, saying how
// many went. Its route is an action, which has checked the form's token
// (the check here keeps the function safe wherever it is routed).
//
// Each file is one DELETE of the API, counted by the key's rate limit like
// any other call. The first refusal (the rate limit's 429 among them)
// stops the files not yet started, and the outcome says how many were
// deleted and why the rest were not; a file already gone counts as
// deleted, since the person wanted it gone.
func (c *Console) deleteSelected(v *visit) error {
	v.r.Body = http.MaxBytesReader(v.w, v.r.Body, maxBulkForm)
	if err := v.r.ParseForm(); err != nil {
		c.refuse(v.w, v.r, http.StatusRequestEntityTooLarge, fmt.Sprintf("Too many files were selected: delete at most %d at a time.", maxBulkDelete))
		return nil
	}
	if !sameToken(v.r.PostForm.Get("csrf"), v.sess.CSRF) {
		c.refuse(v.w, v.r, http.StatusForbidden, "This form has expired or did not come from this console. Reload the page and try again.")
		return nil
	}
	here := filePageHere(v.r.URL.Query())
	back := withQuery("/console/files", clone(here))
	ids, err := selectedFiles(v.r.PostForm["file"])
	if err != nil {
		return v.done(back, "", err)
	}
	if len(ids) == 0 {
		return v.done(back, "", badInput{"No file was selected, so none was deleted."})
	}
	opts, _ := filePageOptions(url.Values{"workspace": {here.Get("workspace")}})
	deleted, err := deleteAll(v.ctx(), v.api, ids, opts)
	var apiErr *client.Error
	switch {
	case err == nil:
		return v.done(back, deletedFiles(deleted, len(ids)), nil)
	case errors.As(err, &apiErr) && apiErr.StatusCode != http.StatusUnauthorized:
		return v.done(back, "", badInput{deletedFiles(deleted, len(ids)) + " " + apiMessage(apiErr)})
	default:
		return err
	}
}

// deleteAll deletes ids, bulkDeleteWorkers at a time, and returns how many
// are gone. It stops starting deletes at the first error, which it
// returns; deletes already under way finish (a delete is never cut off
// halfway by its neighbour's failure).
func deleteAll(ctx context.Context, api *client.Client, ids []string, opts []client.FileOption) (int, error) {
	var (
		mu      sync.Mutex
		deleted int
		first   error
	)
	var g errgroup.Group
	g.SetLimit(bulkDeleteWorkers)
	for _, id := range ids {
		mu.Lock()
		stop := first != nil
		mu.Unlock()
		if stop {
			break
		}
		g.Go(func() error {
			mu.Lock()
			stop := first != nil
			mu.Unlock()
			if stop {
				return nil
			}
			err := api.DeleteFile(ctx, id, opts...)
			var apiErr *client.Error
			if errors.As(err, &apiErr) && apiErr.StatusCode == http.StatusNotFound {
				err = nil // already gone: what was asked
			}
			mu.Lock()
			defer mu.Unlock()
			if err == nil {
				deleted++
			} else if first == nil {
				first = err
			}
			return nil
		})
	}
	_ = g.Wait()
	return deleted, first
}

// deletedFiles says how many of n files a bulk delete deleted.
func deletedFiles(deleted, n int) string {
	switch {
	case deleted == n && n == 1:
		return "1 file deleted."
	case deleted == n:
		return fmt.Sprintf("%d files deleted.", n)
	default:
		return fmt.Sprintf("Deleted %d of the %d files selected.", deleted, n)
	}
}
