package providertest

import (
	"bytes"
	"encoding/json"
	"io"
	"mime/multipart"
	"net/http"
	"os"
	"strings"
	"testing"
)

// form builds a multipart body with the given fields and, when fileName is
// not empty, a file part.
func form(t *testing.T, fields map[string]string, fileName, content string) (string, *bytes.Buffer) {
	t.Helper()
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	for k, v := range fields {
		if err := mw.WriteField(k, v); err != nil {
			t.Fatal(err)
		}
	}
	if fileName != "" {
		w, err := mw.CreateFormFile("file", fileName)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.WriteString(w, content)
	}
	if err := mw.Close(); err != nil {
		t.Fatal(err)
	}
	return mw.FormDataContentType(), &buf
}

// send sends a request and returns the status, the headers and the raw
// body of the answer.
func send(t *testing.T, method, url string, header map[string]string, ctype string, body io.Reader) (int, http.Header, []byte) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), method, url, body)
	if err != nil {
		t.Fatal(err)
	}
	if ctype != "" {
		req.Header.Set("Content-Type", ctype)
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, resp.Header, b
}

// do sends a request whose answer must be a JSON object, and returns it
// decoded.
func do(t *testing.T, method, url string, header map[string]string, ctype string, body io.Reader) (int, map[string]any, http.Header) {
	t.Helper()
	status, h, b := send(t, method, url, header, ctype, body)
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("answer is not JSON: %v", err)
	}
	return status, m, h
}

func TestOpenAIProtocol(t *testing.T) {
	s := NewOpenAI(t)
	auth := map[string]string{"Authorization": "Bearer " + s.Key}
	tests := []struct {
		name     string
		header   map[string]string
		fields   map[string]string
		file     string
		status   int
		wantType string
	}{
		{"ok", auth, map[string]string{"purpose": "user_data"}, "a.txt", 200, ""},
		{"no key", nil, map[string]string{"purpose": "user_data"}, "a.txt", 401, "invalid_request_error"},
		{"wrong key", map[string]string{"Authorization": "Bearer nope"}, map[string]string{"purpose": "user_data"}, "a.txt", 401, "invalid_request_error"},
		{"no purpose", auth, nil, "a.txt", 400, "invalid_request_error"},
		{"bad purpose", auth, map[string]string{"purpose": "storage"}, "a.txt", 400, "invalid_request_error"},
		{"no file", auth, map[string]string{"purpose": "user_data"}, "", 400, "invalid_request_error"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctype, body := form(t, tt.fields, tt.file, "hello")
			status, m, h := do(t, http.MethodPost, s.BaseURL+"/files", tt.header, ctype, body)
			if status != tt.status || !strings.HasPrefix(h.Get("x-request-id"), "req_") {
				t.Fatalf("status %d, x-request-id %q: %v", status, h.Get("x-request-id"), m)
			}
			if tt.status == 200 {
				if m["object"] != "file" || m["bytes"] != float64(5) || m["purpose"] != "user_data" || m["filename"] != "a.txt" ||
					!strings.HasPrefix(m["id"].(string), "file-") {
					t.Fatalf("file object %v", m)
				}
				return
			}
			if e, ok := m["error"].(map[string]any); !ok || e["type"] != tt.wantType || e["message"] == "" {
				t.Fatalf("error body %v", m)
			}
		})
	}
	if n := len(s.Files()); n != 1 {
		t.Fatalf("%d files stored, want 1", n)
	}
	id := s.Files()[0].ID
	status, m, _ := do(t, http.MethodDelete, s.BaseURL+"/files/"+id, auth, "", nil)
	if status != 200 || m["deleted"] != true || m["id"] != id {
		t.Fatalf("delete: %d %v", status, m)
	}
	if status, _, _ := do(t, http.MethodDelete, s.BaseURL+"/files/"+id, auth, "", nil); status != 404 {
		t.Fatalf("second delete: %d", status)
	}
}

func TestAnthropicProtocol(t *testing.T) {
	s := NewAnthropic(t)
	good := map[string]string{"x-api-key": s.Key, "anthropic-version": "2023-06-01", "anthropic-beta": "files-api-2025-04-14"}
	without := func(k string) map[string]string {
		h := map[string]string{}
		for kk, v := range good {
			if kk != k {
				h[kk] = v
			}
		}
		return h
	}
	with := func(k, v string) map[string]string {
		h := without(k)
		h[k] = v
		return h
	}
	bearerOnly := without("x-api-key")
	bearerOnly["Authorization"] = "Bearer " + s.Key
	tests := []struct {
		name     string
		header   map[string]string
		file     string
		status   int
		wantType string
	}{
		{"ok", good, "a.pdf", 200, ""},
		{"several betas", with("anthropic-beta", "other-beta, files-api-2025-04-14"), "a.pdf", 200, ""},
		{"no key", without("x-api-key"), "a.pdf", 401, "authentication_error"},
		{"bearer instead of x-api-key", bearerOnly, "a.pdf", 401, "authentication_error"},
		{"no version", without("anthropic-version"), "a.pdf", 400, "invalid_request_error"},
		{"no beta", without("anthropic-beta"), "a.pdf", 404, "not_found_error"},
		{"no file", good, "", 400, "invalid_request_error"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctype, body := form(t, nil, tt.file, "%PDF-")
			status, m, h := do(t, http.MethodPost, s.BaseURL+"/v1/files", tt.header, ctype, body)
			if status != tt.status || !strings.HasPrefix(h.Get("request-id"), "req_") {
				t.Fatalf("status %d, request-id %q: %v", status, h.Get("request-id"), m)
			}
			if tt.status == 200 {
				if m["type"] != "file" || m["size_bytes"] != float64(5) || m["downloadable"] != false || m["filename"] != "a.pdf" ||
					!strings.HasPrefix(m["id"].(string), "file_") || m["created_at"] == "" {
					t.Fatalf("file metadata %v", m)
				}
				return
			}
			e, ok := m["error"].(map[string]any)
			if !ok || m["type"] != "error" || e["type"] != tt.wantType || m["request_id"] != h.Get("request-id") {
				t.Fatalf("error body %v", m)
			}
		})
	}
	id := s.Files()[0].ID
	status, m, _ := do(t, http.MethodDelete, s.BaseURL+"/v1/files/"+id, good, "", nil)
	if status != 200 || m["type"] != "file_deleted" || m["id"] != id {
		t.Fatalf("delete: %d %v", status, m)
	}
}

func TestUnknownRouteIsProviderShaped404(t *testing.T) {
	s := NewAnthropic(t)
	status, m, _ := do(t, http.MethodGet, s.BaseURL+"/v1/models", nil, "", nil)
	if status != 404 || m["type"] != "error" {
		t.Fatalf("%d %v", status, m)
	}
	if len(s.Requests()) != 1 || s.Requests()[0].Status != 404 {
		t.Fatalf("requests %+v", s.Requests())
	}
}

func TestDiscardUploadsKeepsNoBytes(t *testing.T) {
	s := NewOpenAI(t)
	s.DiscardUploads()
	auth := map[string]string{"Authorization": "Bearer " + s.Key}
	ctype, body := form(t, map[string]string{"purpose": "batch"}, "a.jsonl", "hello world")
	status, m, _ := do(t, http.MethodPost, s.BaseURL+"/files", auth, ctype, body)
	if status != 200 || m["bytes"] != float64(11) || m["purpose"] != "batch" {
		t.Fatalf("upload: %d %v", status, m)
	}
	files := s.Files()
	if len(files) != 1 || files[0].Size != 11 || files[0].SHA256 != "" || files[0].Downloadable {
		t.Fatalf("stored %+v, want one of 11 bytes, neither hashed nor downloadable", files)
	}
	if entries, err := os.ReadDir(s.dir); err != nil || len(entries) != 0 {
		t.Fatalf("the stand-in's directory holds %d entries (%v), want none", len(entries), err)
	}
	if status, _, _ := do(t, http.MethodGet, s.BaseURL+"/files/"+files[0].ID+"/content", auth, "", nil); status < 400 {
		t.Fatalf("content of a discarded upload: %d", status)
	}
	// A form cut short is still refused: the body is parsed, not skipped.
	ctype, body = form(t, map[string]string{"purpose": "batch"}, "a.jsonl", "hello world")
	short := bytes.NewReader(body.Bytes()[:body.Len()-10])
	if status, _, _ := do(t, http.MethodPost, s.BaseURL+"/files", auth, ctype, short); status != 400 {
		t.Fatalf("truncated form: %d, want 400", status)
	}
}
