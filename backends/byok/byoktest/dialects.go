package byoktest

import (
	"net/http"
	"slices"
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
		"created_at": f.CreatedAt.Format(time.RFC3339Nano), "downloadable": false,
	}
}

func (anthropic) deleted(id string) any { return map[string]any{"id": id, "type": "file_deleted"} }

func (anthropic) errorBody(typ, msg, requestID string) any {
	return map[string]any{"type": "error", "error": map[string]any{"type": typ, "message": msg}, "request_id": requestID}
}

func (anthropic) requestIDHeader() string { return "request-id" }
func (anthropic) newRequestID() string    { return "req_011C" + randomID(20) }
func (anthropic) newFileID() string       { return "file_011C" + randomID(20) }
