package console_test

import (
	"bytes"
	"context"
	"database/sql"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/aigateway/gateway/client"
	"github.com/aigateway/gateway/policy/keys"
	_ "modernc.org/sqlite"
)

// BenchmarkFilesPage renders the files page of a workspace holding 100,000
// files, server-side: the session check (GET /key) and one keyset page of
// the list (GET /files), both through the API in process, then the
// template. Keyset paging makes it a page of 50 rows whatever the total.
func BenchmarkFilesPage(b *testing.B) {
	cfg := testConfig(b)
	// Each page is two API calls of the key, counted by its rate limit as
	// any client's; the benchmark measures the render, not the limiter.
	off := false
	cfg.Limits.Rate.Enabled = &off
	g := startGateway(b, cfg, true)
	std := g.createKey(b, keys.RoleStandard)
	ctx := context.Background()
	api := g.api(b, std)
	if _, err := api.UploadFile(ctx, client.Upload{Filename: "first.txt", Content: strings.NewReader("hello"), Size: 5}); err != nil {
		b.Fatal(err)
	}
	var me struct {
		Data struct {
			WorkspaceID string `json:"workspace_id"`
		} `json:"data"`
	}
	req, _ := http.NewRequest(http.MethodGet, g.URL+"/api/v1/key", nil)
	req.Header.Set("Authorization", "Bearer "+std)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		b.Fatal(err)
	}
	decodeJSONReader(b, resp, &me)
	addFileRecords(b, cfg.Metadata.DSN, me.Data.WorkspaceID, 100_000)

	v := g.browser(b)
	v.signIn(std)
	var cookie string
	for _, c := range v.hc.Jar.Cookies(mustURL(b, g.URL+"/console/")) {
		if c.Name == "console_session" {
			cookie = c.Name + "=" + c.Value
		}
	}
	h := g.app.Handler()
	get := func() *httptest.ResponseRecorder {
		r := httptest.NewRequest(http.MethodGet, "/console/files", nil)
		r.Header.Set("Cookie", cookie)
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		return w
	}
	if w := get(); w.Code != http.StatusOK || strings.Count(w.Body.String(), `class="filename"`) != 50 {
		b.Fatalf("files page = %d with %d rows", w.Code, strings.Count(w.Body.String(), `class="filename"`))
	}
	b.ReportAllocs()
	start := time.Now()
	for b.Loop() {
		if w := get(); w.Code != http.StatusOK {
			b.Fatalf("files page = %d", w.Code)
		}
	}
	b.ReportMetric(float64(time.Since(start).Microseconds())/float64(b.N)/1000, "ms/page")
}

// addFileRecords writes n file records of workspace straight into the
// SQLite store, in one transaction: uploading 100,000 files through the API
// would take minutes and measure nothing the benchmark is about.
func addFileRecords(b *testing.B, dsn, workspace string, n int) {
	b.Helper()
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	tx, err := db.Begin()
	if err != nil {
		b.Fatal(err)
	}
	stmt, err := tx.Prepare(`INSERT INTO files (id, workspace_id, key_id, filename, mime_type, size, sha256, backend, object_key, purpose, created_at)
		VALUES (?, ?, 'bench', ?, 'text/plain', 5, '', 'fs', ?, 'user_data', ?)`)
	if err != nil {
		b.Fatal(err)
	}
	base := time.Now().Add(-time.Hour).UnixMicro()
	for i := range n {
		id := fmt.Sprintf("file-bench-%06d", i)
		if _, err := stmt.Exec(id, workspace, "report-"+id+".txt", "bench/"+id, base+int64(i)); err != nil {
			b.Fatal(err)
		}
	}
	if err := tx.Commit(); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkUploadPart sends a 16 MiB part of an upload in parts over HTTP
// to the gateway two ways: straight to the API (api: the multipart form a
// client sends), and as the Files page does (console: the slice's bytes,
// passed on to the API in process as that form, streamed). The ratio of
// their MB/s is what the console's way costs. Making and cancelling each
// upload is outside the timing.
func BenchmarkUploadPart(b *testing.B) {
	const size = 16 << 20
	cfg := testConfig(b)
	off := false
	cfg.Limits.Rate.Enabled = &off
	g := startGateway(b, cfg, true)
	v := g.browser(b)
	v.signIn(g.Management)
	token := v.csrf("/console/files")
	content := bytes.Repeat([]byte("0123456789abcdef"), size/16)
	create := func() string {
		a := v.send("/console/uploads", token, "application/json", strings.NewReader(fmt.Sprintf(`{"bytes":%d,"filename":"part.txt","mime_type":"text/plain"}`, size)))
		var up struct{ ID string }
		decodeJSON(b, a.Body, &up)
		if up.ID == "" {
			b.Fatalf("create = %d %s", a.StatusCode, a.Body)
		}
		return up.ID
	}
	cancel := func(id string) {
		if a := v.send("/console/uploads/"+id+"/cancel", token, "", nil); a.StatusCode != http.StatusOK {
			b.Fatalf("cancel = %d %s", a.StatusCode, a.Body)
		}
	}
	send := map[string]func(id string) *http.Request{
		"api": func(id string) *http.Request {
			var form bytes.Buffer
			mw := multipart.NewWriter(&form)
			fw, _ := mw.CreateFormFile("data", "part")
			_, _ = fw.Write(content)
			_ = mw.Close()
			req, _ := http.NewRequest(http.MethodPost, g.URL+"/api/v1/uploads/"+id+"/parts", &form)
			req.Header.Set("Content-Type", mw.FormDataContentType())
			req.Header.Set("Authorization", "Bearer "+g.Management)
			return req
		},
		"console": func(id string) *http.Request {
			req, _ := http.NewRequest(http.MethodPost, g.URL+"/console/uploads/"+id+"/parts", bytes.NewReader(content))
			req.Header.Set("Content-Type", "application/octet-stream")
			req.Header.Set("X-CSRF-Token", token)
			req.Header.Set("Origin", g.URL)
			req.Header.Set("Sec-Fetch-Site", "same-origin")
			return req
		},
	}
	for _, way := range []string{"api", "console"} {
		b.Run(way, func(b *testing.B) {
			b.SetBytes(size)
			for b.Loop() {
				b.StopTimer()
				id := create()
				req := send[way](id)
				b.StartTimer()
				resp, err := v.hc.Do(req)
				if err != nil {
					b.Fatal(err)
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != http.StatusOK {
					b.Fatalf("part = %d", resp.StatusCode)
				}
				b.StopTimer()
				cancel(id)
				b.StartTimer()
			}
		})
	}
}
