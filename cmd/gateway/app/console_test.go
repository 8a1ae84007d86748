package app

import (
	"net/http"
	"net/http/httptest"
	"testing"
)

// TestWithConsole: the console's paths go to the console, a browser's
// visit of the root to the console's first page, the browser's icon
// request to an empty answer, and everything else, API clients at the root
// included, to the API untouched.
func TestWithConsole(t *testing.T) {
	api := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Header().Set("X-Handler", "api") })
	con := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Header().Set("X-Handler", "console") })
	h := withConsole(api, con)
	const browser = "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"
	for _, tc := range []struct {
		method, path, accept string
		status               int
		handler, location    string
	}{
		{"GET", "/console/", browser, 200, "console", ""},
		{"POST", "/console/keys", "", 200, "console", ""},
		{"GET", "/console", browser, http.StatusMovedPermanently, "", "/console/"},
		{"GET", "/", browser, http.StatusSeeOther, "", "/console/"},
		{"HEAD", "/", "TEXT/HTML", http.StatusSeeOther, "", "/console/"},
		{"GET", "/", "application/json", 200, "api", ""},
		{"GET", "/", "", 200, "api", ""},
		{"GET", "/", "*/*", 200, "api", ""},
		{"GET", "/", "text/html;q=0, */*", 200, "api", ""},
		{"GET", "/", "text/html; q=0.000", 200, "api", ""},
		{"GET", "/", "text/html;q=0.5", http.StatusSeeOther, "", "/console/"},
		{"GET", "/", "application/json, text/html", 200, "api", ""},
		{"GET", "/", "application/problem+json, text/html", 200, "api", ""},
		{"POST", "/", browser, 200, "api", ""},
		{"GET", "/api/v1/models", browser, 200, "api", ""},
		{"GET", "/consoleX", browser, 200, "api", ""},
		{"GET", "/favicon.ico", "image/avif,image/webp,*/*", http.StatusNoContent, "", ""},
		{"DELETE", "/favicon.ico", "", 200, "api", ""},
	} {
		req := httptest.NewRequest(tc.method, tc.path, nil)
		if tc.accept != "" {
			req.Header.Set("Accept", tc.accept)
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != tc.status || rec.Header().Get("X-Handler") != tc.handler || rec.Header().Get("Location") != tc.location {
			t.Errorf("%s %s (Accept %q) = %d, handler %q, Location %q; want %d, %q, %q", tc.method, tc.path, tc.accept,
				rec.Code, rec.Header().Get("X-Handler"), rec.Header().Get("Location"), tc.status, tc.handler, tc.location)
		}
	}
}

func TestBrowserBase(t *testing.T) {
	for addr, want := range map[string]string{
		"127.0.0.1:8080": "http://127.0.0.1:8080",
		"0.0.0.0:8080":   "http://localhost:8080",
		"[::]:9090":      "http://localhost:9090",
		":7000":          "http://localhost:7000",
		"[::1]:8080":     "http://[::1]:8080",
	} {
		if got := browserBase(addr); got != want {
			t.Errorf("browserBase(%q) = %q, want %q", addr, got, want)
		}
	}
}
