package providertest

import (
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
)

// dialect is one provider's side of the wire protocol.
type dialect interface {
	authorize(h http.Header, key string) (status int, typ, msg string)
	checkForm(rec Request) string
	fileObject(f StoredFile) any
	deleted(id string) any
	errorBody(typ, msg, requestID string) any
	requestIDHeader() string
	newRequestID() string
	newFileID() string
	// downloadable is whether the provider serves f's content; requested
	// is what a seed asked for.
	downloadable(f StoredFile, requested bool) bool
	notDownloadable(f StoredFile) string
	contentType(f StoredFile) string
	// page picks a page of files (oldest first) for the list query q, or
	// says why q is refused.
	page(q url.Values, files []StoredFile) (page []StoredFile, hasMore bool, refusal string)
	list(data []any, firstID, lastID any, hasMore bool) any
}

// checkParams refuses query parameters the API does not define, so a
// client sending another provider's parameter finds out.
func checkParams(q url.Values, allowed ...string) string {
	for k, v := range q {
		if !slices.Contains(allowed, k) {
			return "Unrecognized request argument supplied: " + k
		}
		if len(v) != 1 {
			return "Repeated request argument: " + k
		}
	}
	return ""
}

// parseLimit reads limit, def when absent.
func parseLimit(q url.Values, def, max int) (int, string) {
	v := q.Get("limit")
	if v == "" {
		return def, ""
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 || n > max {
		return 0, fmt.Sprintf("limit: must be an integer between 1 and %d", max)
	}
	return n, ""
}

// index finds id in files, -1 when absent.
func index(files []StoredFile, id string) int {
	return slices.IndexFunc(files, func(f StoredFile) bool { return f.ID == id })
}

// pageAfter is the page of at most limit files that follows the file after
// ("" for the first page), and whether more follow. Both providers answer an
// unknown id with an empty page.
func pageAfter(files []StoredFile, after string, limit int) ([]StoredFile, bool) {
	if after != "" {
		i := index(files, after)
		if i < 0 {
			return nil, false
		}
		files = files[i+1:]
	}
	if len(files) > limit {
		return files[:limit], true
	}
	return files, false
}

// openAI follows https://platform.openai.com/docs/api-reference/files.
type openAI struct{}

var openAIPurposes = []string{"assistants", "batch", "fine-tune", "vision", "user_data", "evals"}

func (openAI) authorize(h http.Header, key string) (int, string, string) {
	got, ok := strings.CutPrefix(h.Get("Authorization"), "Bearer ")
	if !ok || got == "" {
		return http.StatusUnauthorized, "invalid_request_error",
			"You didn't provide an API key. You need to provide your API key in an Authorization header using Bearer auth."
	}
	if got != key {
		// The real API echoes a masked key; the stand-in echoes all of it,
		// to prove the client never passes the message on.
		return http.StatusUnauthorized, "invalid_request_error", "Incorrect API key provided: " + got + "."
	}
	return 0, "", ""
}

func (openAI) checkForm(rec Request) string {
	purpose, ok := rec.Fields["purpose"]
	switch {
	case !ok:
		return "Missing required parameter: 'purpose'."
	case !slices.Contains(openAIPurposes, purpose):
		return "Invalid value for 'purpose'."
	case rec.FileParts != 1 || rec.Filename == "":
		return "Missing required parameter: 'file'."
	}
	return ""
}

func (openAI) fileObject(f StoredFile) any {
	return map[string]any{
		"id": f.ID, "object": "file", "bytes": f.Size, "created_at": f.CreatedAt.Unix(),
		"filename": f.Filename, "purpose": f.Purpose, "status": "processed", "status_details": nil,
		"expires_at": nil,
	}
}

func (openAI) deleted(id string) any {
	return map[string]any{"id": id, "object": "file", "deleted": true}
}

func (openAI) errorBody(typ, msg, _ string) any {
	return map[string]any{"error": map[string]any{"message": msg, "type": typ, "param": nil, "code": nil}}
}

func (openAI) downloadable(f StoredFile, _ bool) bool {
	return f.Purpose != "assistants" && f.Purpose != "user_data"
}

func (openAI) notDownloadable(f StoredFile) string {
	return "Not allowed to download files of purpose: " + f.Purpose
}

func (openAI) contentType(StoredFile) string { return "application/octet-stream" }

// page: newest first unless order=asc; after continues past an id (an
// unknown one gives an empty page).
func (openAI) page(q url.Values, files []StoredFile) ([]StoredFile, bool, string) {
	if msg := checkParams(q, "after", "limit", "order", "purpose"); msg != "" {
		return nil, false, msg
	}
	limit, msg := parseLimit(q, 10000, 10000)
	if msg != "" {
		return nil, false, msg
	}
	switch q.Get("order") {
	case "", "desc":
		slices.Reverse(files)
	case "asc":
	default:
		return nil, false, "order: must be one of asc, desc"
	}
	if p := q.Get("purpose"); p != "" {
		files = slices.DeleteFunc(files, func(f StoredFile) bool { return f.Purpose != p })
	}
	files, more := pageAfter(files, q.Get("after"), limit)
	return files, more, ""
}

func (openAI) list(data []any, firstID, lastID any, hasMore bool) any {
	return map[string]any{"object": "list", "data": data, "first_id": firstID, "last_id": lastID, "has_more": hasMore}
}

func (openAI) requestIDHeader() string { return "x-request-id" }
func (openAI) newRequestID() string    { return "req_" + strings.ToLower(randomID(32)) }
func (openAI) newFileID() string       { return "file-" + randomID(22) }

// anthropic follows https://docs.anthropic.com/en/api/files-create.
type anthropic struct{}

func (anthropic) authorize(h http.Header, key string) (int, string, string) {
	switch got := h.Get("x-api-key"); {
	case got == "":
		return http.StatusUnauthorized, "authentication_error", "x-api-key header is required"
	case got != key:
		return http.StatusUnauthorized, "authentication_error", "invalid x-api-key: " + got
	case h.Get("anthropic-version") == "":
		return http.StatusBadRequest, "invalid_request_error", "anthropic-version: header is required"
	case h.Get("anthropic-version") != "2023-06-01":
		return http.StatusBadRequest, "invalid_request_error", "anthropic-version: unknown version"
	case !hasBeta(h, "files-api-2025-04-14"):
		return http.StatusNotFound, "not_found_error", "The Files API is in beta: send anthropic-beta: files-api-2025-04-14"
	}
	return 0, "", ""
}

func hasBeta(h http.Header, want string) bool {
	for _, v := range h.Values("anthropic-beta") {
		for b := range strings.SplitSeq(v, ",") {
			if strings.TrimSpace(b) == want {
				return true
			}
		}
	}
	return false
}

func (anthropic) checkForm(rec Request) string {
	if rec.FileParts != 1 || rec.Filename == "" {
		return "file: Field required"
	}
	return ""
}

func (anthropic) fileObject(f StoredFile) any {
	mimeType := f.ContentType
	if mimeType == "" {
		mimeType = "application/octet-stream"
	}
	return map[string]any{
		"id": f.ID, "type": "file", "filename": f.Filename, "mime_type": mimeType, "size_bytes": f.Size,
		"created_at": f.CreatedAt.Format(time.RFC3339Nano), "downloadable": f.Downloadable,
	}
}

func (anthropic) deleted(id string) any { return map[string]any{"id": id, "type": "file_deleted"} }

func (anthropic) errorBody(typ, msg, requestID string) any {
	return map[string]any{"type": "error", "error": map[string]any{"type": typ, "message": msg}, "request_id": requestID}
}

// downloadable: files a client uploaded are never served back.
func (anthropic) downloadable(_ StoredFile, requested bool) bool { return requested }

func (anthropic) notDownloadable(StoredFile) string {
	return "File is not downloadable: only files created by the API can be downloaded"
}

func (anthropic) contentType(f StoredFile) string {
	if f.ContentType == "" {
		return "application/octet-stream"
	}
	return f.ContentType
}

// page: newest first; after_id pages on towards older files, before_id
// back towards newer ones (the page just before the id).
func (anthropic) page(q url.Values, files []StoredFile) ([]StoredFile, bool, string) {
	if msg := checkParams(q, "after_id", "before_id", "limit", "beta"); msg != "" {
		return nil, false, msg
	}
	limit, msg := parseLimit(q, 20, 1000)
	if msg != "" {
		return nil, false, msg
	}
	slices.Reverse(files)
	after, before := q.Get("after_id"), q.Get("before_id")
	switch {
	case after != "" && before != "":
		return nil, false, "after_id and before_id cannot be used together"
	case before != "":
		i := index(files, before)
		if i < 0 {
			return nil, false, ""
		}
		start := max(0, i-limit)
		return files[start:i], start > 0, ""
	}
	files, more := pageAfter(files, after, limit)
	return files, more, ""
}

func (anthropic) list(data []any, firstID, lastID any, hasMore bool) any {
	return map[string]any{"data": data, "first_id": firstID, "last_id": lastID, "has_more": hasMore}
}

func (anthropic) requestIDHeader() string { return "request-id" }
func (anthropic) newRequestID() string    { return "req_011C" + randomID(20) }
func (anthropic) newFileID() string       { return "file_011C" + randomID(20) }
