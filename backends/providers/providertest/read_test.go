package providertest

import (
	"io"
	"net/http"
	"strings"
	"testing"
)

// get sends a GET and returns the status, the headers and the raw body.
func get(t *testing.T, url string, header map[string]string, body io.Reader) (int, http.Header, string) {
	t.Helper()
	status, h, b := send(t, http.MethodGet, url, header, "", body)
	return status, h, string(b)
}

// checkPage fails unless the list answer m holds the files ids, in order,
// with first_id, last_id and has_more to match.
func checkPage(t *testing.T, m map[string]any, ids []string, hasMore bool) {
	t.Helper()
	var got []string
	for _, f := range m["data"].([]any) {
		got = append(got, f.(map[string]any)["id"].(string))
	}
	if strings.Join(got, ",") != strings.Join(ids, ",") || m["has_more"] != hasMore ||
		m["first_id"] != ids[0] || m["last_id"] != ids[len(ids)-1] {
		t.Fatalf("list %v, want %v has_more %v", m, ids, hasMore)
	}
}

func TestOpenAIReadRoutes(t *testing.T) {
	s := NewOpenAI(t)
	auth := map[string]string{"Authorization": "Bearer " + s.Key}
	ctype, body := form(t, map[string]string{"purpose": "user_data"}, "up.txt", "hello")
	if status, m, _ := do(t, http.MethodPost, s.BaseURL+"/files", auth, ctype, body); status != 200 {
		t.Fatalf("upload: %d %v", status, m)
	}
	up := s.Files()[0]
	seeded := s.Seed(SeedFile{Filename: "out.jsonl", Size: 3, Open: func() io.Reader { return strings.NewReader("abc") }})

	for _, tt := range []struct {
		name, query string
		status      int
		ids         []string
		hasMore     bool
	}{
		{"newest first", "", 200, []string{seeded.ID, up.ID}, false},
		{"asc", "?order=asc", 200, []string{up.ID, seeded.ID}, false},
		{"limit", "?limit=1", 200, []string{seeded.ID}, true},
		{"after", "?limit=1&after=" + seeded.ID, 200, []string{up.ID}, false},
		{"purpose", "?purpose=user_data", 200, []string{up.ID}, false},
		{"limit 0", "?limit=0", 400, nil, false},
		{"limit word", "?limit=ten", 400, nil, false},
		{"bad order", "?order=newest", 400, nil, false},
		{"anthropic's paging", "?after_id=" + up.ID, 400, nil, false},
		{"repeated", "?limit=1&limit=2", 400, nil, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			status, m, _ := do(t, http.MethodGet, s.BaseURL+"/files"+tt.query, auth, "", nil)
			if status != tt.status {
				t.Fatalf("%d %v", status, m)
			}
			if status != 200 {
				return
			}
			if m["object"] != "list" {
				t.Fatalf("list %v without object list", m)
			}
			checkPage(t, m, tt.ids, tt.hasMore)
		})
	}

	if status, m, _ := do(t, http.MethodGet, s.BaseURL+"/files/"+up.ID, auth, "", nil); status != 200 || m["id"] != up.ID || m["object"] != "file" || m["purpose"] != "user_data" {
		t.Fatalf("metadata: %d %v", status, m)
	}
	if status, m, _ := do(t, http.MethodGet, s.BaseURL+"/files/"+up.ID+"/content", auth, "", nil); status != 400 {
		t.Fatalf("content of a user_data file: %d %v", status, m)
	}
	status, h, b := get(t, s.BaseURL+"/files/"+seeded.ID+"/content", auth, nil)
	if status != 200 || b != "abc" || h.Get("Content-Type") != "application/octet-stream" || h.Get("Content-Length") != "3" {
		t.Fatalf("content: %d %q %v", status, b, h)
	}
	if status, _, _ := get(t, s.BaseURL+"/files/"+seeded.ID, auth, strings.NewReader("{}")); status != 400 {
		t.Fatalf("GET with a body: %d", status)
	}
	if status, _, _ := get(t, s.BaseURL+"/files/"+seeded.ID, nil, nil); status != 401 {
		t.Fatalf("GET without a key: %d", status)
	}
	if status, _, _ := get(t, s.BaseURL+"/files/file-nope", auth, nil); status != 404 {
		t.Fatalf("unknown file: %d", status)
	}
}

func TestAnthropicReadRoutes(t *testing.T) {
	s := NewAnthropic(t)
	good := map[string]string{"x-api-key": s.Key, "anthropic-version": "2023-06-01", "anthropic-beta": "files-api-2025-04-14"}
	var ids []string // oldest first
	for i := range 4 {
		ids = append(ids, s.Seed(SeedFile{Filename: "f.pdf", ContentType: "application/pdf", Size: 1, Downloadable: i != 0,
			Open: func() io.Reader { return strings.NewReader("x") }}).ID)
	}
	for _, tt := range []struct {
		name, query string
		status      int
		ids         []string
		hasMore     bool
	}{
		{"newest first", "", 200, []string{ids[3], ids[2], ids[1], ids[0]}, false},
		{"after_id", "?limit=2&after_id=" + ids[3], 200, []string{ids[2], ids[1]}, true},
		{"before_id", "?limit=2&before_id=" + ids[0], 200, []string{ids[2], ids[1]}, true},
		{"before_id at the start", "?limit=2&before_id=" + ids[2], 200, []string{ids[3]}, false},
		{"both", "?after_id=" + ids[0] + "&before_id=" + ids[1], 400, nil, false},
		{"limit over 1000", "?limit=1001", 400, nil, false},
		{"openai's order", "?order=asc", 400, nil, false},
		{"sdk's beta flag", "?beta=true&limit=1", 200, []string{ids[3]}, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			status, m, _ := do(t, http.MethodGet, s.BaseURL+"/v1/files"+tt.query, good, "", nil)
			if status != tt.status {
				t.Fatalf("%d %v", status, m)
			}
			if status != 200 {
				return
			}
			if _, isOpenAI := m["object"]; isOpenAI {
				t.Fatalf("list %v with OpenAI's object", m)
			}
			checkPage(t, m, tt.ids, tt.hasMore)
		})
	}
	if status, m, _ := do(t, http.MethodGet, s.BaseURL+"/v1/files/"+ids[0], good, "", nil); status != 200 || m["downloadable"] != false || m["mime_type"] != "application/pdf" {
		t.Fatalf("metadata: %d %v", status, m)
	}
	if status, _, _ := get(t, s.BaseURL+"/v1/files/"+ids[0]+"/content", good, nil); status != 400 {
		t.Fatalf("content of a file not downloadable: %d", status)
	}
	status, h, b := get(t, s.BaseURL+"/v1/files/"+ids[1]+"/content", good, nil)
	if status != 200 || b != "x" || h.Get("Content-Type") != "application/pdf" || !strings.HasPrefix(h.Get("request-id"), "req_") {
		t.Fatalf("content: %d %q %v", status, b, h)
	}
	noBeta := map[string]string{"x-api-key": s.Key, "anthropic-version": "2023-06-01"}
	if status, _, _ := get(t, s.BaseURL+"/v1/files/"+ids[1]+"/content", noBeta, nil); status != 404 {
		t.Fatalf("content without the beta header: %d", status)
	}
	req := s.Requests()[len(s.Requests())-2]
	if req.FileID != ids[1] || req.SentBytes != 1 || req.Status != 200 {
		t.Fatalf("recorded %+v", req)
	}
}

func TestReadKnobs(t *testing.T) {
	s := NewOpenAI(t)
	auth := map[string]string{"Authorization": "Bearer " + s.Key}
	s.FailReads(http.StatusTooManyRequests)
	s.RetryAfter("12")
	status, h, _ := get(t, s.BaseURL+"/files", auth, nil)
	if status != 429 || h.Get("Retry-After") != "12" {
		t.Fatalf("%d Retry-After %q", status, h.Get("Retry-After"))
	}
	s.Reset()
	s.RedirectReadsTo("http://127.0.0.1:1/elsewhere")
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, s.BaseURL+"/files", nil)
	resp, err := (&http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusTemporaryRedirect || resp.Header.Get("Location") != "http://127.0.0.1:1/elsewhere" {
		t.Fatalf("%d %v", resp.StatusCode, resp.Header)
	}
	s.Reset()
	if status, _, _ := get(t, s.BaseURL+"/files", auth, nil); status != 200 {
		t.Fatalf("after Reset: %d", status)
	}
}
