package gateway

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// FuzzUpload sends arbitrary bodies through the upload route's multipart
// parsing (against a fake file service): nothing a client sends may panic
// the handler or be answered 500. Seeded with the shapes of Go's multipart
// advisories (many parts, many or huge part headers, CVE-2022-41725,
// CVE-2023-24536) and the malformed parts that once gave 500s.
func FuzzUpload(f *testing.F) {
	part := func(headers, body string) string { return "--" + boundary + "\r\n" + headers + "\r\n\r\n" + body + "\r\n" }
	end := "--" + boundary + "--\r\n"
	file := `Content-Disposition: form-data; name="file"; filename="a.txt"`
	seeds := []string{
		form(filePart("a.txt", "hello")),
		part(file, "hello") + part(`Content-Disposition: form-data; name="purpose"`, "assistants") + end,
		strings.Repeat(part(`Content-Disposition: form-data; name="x"`, "v"), 40) + end,
		part(file+strings.Repeat("\r\nX-A: b", 2000), "hello") + end,
		part(file+"\r\nX-Long: "+strings.Repeat("a", 64<<10), "hello") + end,
		part(file+"\r\nBad\x00Name: v", "hello") + end,
		part(file+"\r\nX\x7f: v", "hello") + end,
		part(file+"\r\nno colon here", "hello") + end,
		part(`Content-Disposition: form-data; name="file"; filename="x`+"\x01"+`y.txt"`, "hello") + end,
		part(`Content-Disposition: form-data; name="file"; filename*=UTF-8''%2e%2e%2fetc`, "hello") + end,
		"--" + boundary + "\r\n" + file + "\r\n\r\nunterminated",
		"", "--", end,
	}
	for _, s := range seeds {
		f.Add([]byte(s))
	}
	h, _ := newFilesAPI(f)
	f.Fuzz(func(t *testing.T, body []byte) {
		rec := serve(h, uploadRequest(bytes.NewReader(body)))
		if rec.Code >= http.StatusInternalServerError {
			t.Fatalf("answered %d to a client's body: %s", rec.Code, rec.Body)
		}
	})
}

// FuzzModelPath looks up arbitrary (escaped) model paths: never a 500, and
// a 200 only for a model the catalog has.
func FuzzModelPath(f *testing.F) {
	for _, s := range []string{"openai/gpt-4o", "openai/gpt-4o%3Afree", "%7Eopenai/gpt-latest", "a/b/c",
		"%2e%2e/%2e%2e", "openai/gpt-4o%00", "%ZZ/x", "openai/%E2%80%AE", "x/" + strings.Repeat("a", 300)} {
		f.Add(s)
	}
	api, _ := newTestAPI(f, Options{Catalog: shippedCatalog(f)})
	h := api.Handler()
	f.Fuzz(func(t *testing.T, path string) {
		if strings.ContainsAny(path, " ?#\r\n\t") {
			return // not a request target a client can send as such
		}
		req, err := http.NewRequest(http.MethodGet, "http://x/api/v1/model/"+path, nil)
		if err != nil {
			return
		}
		req.Header.Set("Authorization", "Bearer standard")
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code >= http.StatusInternalServerError {
			t.Fatalf("GET %s = %d: %s", path, rec.Code, rec.Body)
		}
	})
}
