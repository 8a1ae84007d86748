package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aigateway/gateway/files"
	"github.com/aigateway/gateway/files/blob"
	"github.com/aigateway/gateway/policy/keys"
	"github.com/aigateway/gateway/workspace"
)

// fakeReader is a FileReader answering what it is told and recording what
// it was asked.
type fakeReader struct {
	list    []files.ListParams
	page    files.Page
	file    files.File
	got     []files.FileParams
	err     error
	content []byte
	stream  bool // serve content as a provider stream, without ranges
}

func (f *fakeReader) List(_ context.Context, p files.ListParams) (files.Page, error) {
	f.list = append(f.list, p)
	return f.page, f.err
}

func (f *fakeReader) Get(_ context.Context, p files.FileParams) (files.File, error) {
	f.got = append(f.got, p)
	return f.file, f.err
}

func (f *fakeReader) Delete(_ context.Context, p files.FileParams) error {
	f.got = append(f.got, p)
	return f.err
}

func (f *fakeReader) Open(_ context.Context, p files.FileParams) (*files.Content, error) {
	f.got = append(f.got, p)
	if f.err != nil {
		return nil, f.err
	}
	if f.stream {
		return files.StreamContent(f.file, "text/plain", -1, io.NopCloser(bytes.NewReader(f.content))), nil
	}
	data := f.content
	return files.RangedContent(f.file, f.file.MimeType, int64(len(data)), func(_ context.Context, off, n int64) (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(data[off:min(int64(len(data)), off+n)])), nil
	}), nil
}

var readFile = files.File{Record: files.Record{
	ID: "file-abc", WorkspaceID: "w1", Filename: "docs/report.txt", MimeType: "text/plain", Size: 5,
	Purpose: files.PurposeAssistants, CreatedAt: time.Date(2026, 3, 1, 12, 0, 0, 500, time.UTC),
}, Downloadable: true}

func newReadAPI(t testing.TB, fr FileReader) http.Handler {
	t.Helper()
	api, _ := newTestAPI(t, Options{FileReader: fr})
	return api.Handler()
}

func request(method, target string, headers ...string) *http.Request {
	req := httptest.NewRequest(method, target, nil)
	req.Header.Set("Authorization", "Bearer standard")
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	return req
}

func decodeJSON(t *testing.T, rec *httptest.ResponseRecorder) map[string]any {
	t.Helper()
	var got map[string]any
	if err := json.Unmarshal(rec.Body.Bytes(), &got); err != nil {
		t.Fatalf("body %q: %v", rec.Body, err)
	}
	return got
}

func TestListShapes(t *testing.T) {
	fr := &fakeReader{page: files.Page{Files: []files.File{readFile, readFile}, HasMore: true, Cursor: "c1.next"}}
	h := newReadAPI(t, fr)
	for _, tc := range []struct {
		name    string
		headers []string
		want    string
	}{
		{"service", nil, `"_shape":"service","data":[{"_shape":"service","id":"file-abc","type":"file","filename":"docs/report.txt","mime_type":"text/plain","size_bytes":5,"downloadable":true,"created_at":"2026-03-01T12:00:00.0000005Z"},`},
		{"openai", []string{"User-Agent", "OpenAI/JS 5.0"}, `{"_shape":"openai","object":"list","data":[{"_shape":"openai","id":"file-abc","object":"file","bytes":5,`},
		{"anthropic", []string{"anthropic-version", "2023-06-01"}, `{"_shape":"anthropic","data":[{"_shape":"anthropic","id":"file-abc","type":"file"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := serve(h, request(http.MethodGet, "/api/v1/files", tc.headers...))
			if rec.Code != http.StatusOK || !strings.Contains(rec.Body.String(), tc.want) {
				t.Fatalf("%d %s\nwant it to contain %s", rec.Code, rec.Body, tc.want)
			}
			got := decodeJSON(t, rec)
			if got["has_more"] != true || got["first_id"] != "file-abc" || got["last_id"] != "file-abc" {
				t.Errorf("paging fields: %v", got)
			}
			if _, has := got["cursor"]; has != (tc.name == "service") {
				t.Errorf("cursor present = %v in the %s shape", has, tc.name)
			}
		})
	}
	// The last page: the service cursor is null; an empty page has null ids.
	fr.page = files.Page{}
	got := decodeJSON(t, serve(h, request(http.MethodGet, "/api/v1/files")))
	if c, has := got["cursor"]; !has || c != nil || got["first_id"] != nil || got["last_id"] != nil || fmt.Sprint(got["data"]) != "[]" {
		t.Errorf("empty last page = %v", got)
	}
}

func TestListPassesParameters(t *testing.T) {
	fr := &fakeReader{}
	h := newReadAPI(t, fr)
	rec := serve(h, request(http.MethodGet, "/api/v1/files?limit=7&order=asc&cursor=c&after=a&after_id=b&before_id=d&workspace_id=ws&provider=openai"))
	if rec.Code != http.StatusOK {
		t.Fatalf("%d %s", rec.Code, rec.Body)
	}
	want := files.ListParams{Target: files.Target{Key: standardKey, WorkspaceID: "ws", Provider: "openai"},
		Limit: 7, Order: files.OrderAsc, Cursor: "c", After: "a", AfterID: "b", BeforeID: "d"}
	if len(fr.list) != 1 || fr.list[0] != want {
		t.Errorf("List got %+v, want %+v", fr.list, want)
	}
	rec = serve(h, request(http.MethodGet, "/api/v1/files?provider=gemini"))
	if env := decodeEnvelope(t, rec); rec.Code != 400 || fmt.Sprint(env.Error.Metadata) != "map[fields:map[provider:must be openai or anthropic]]" {
		t.Errorf("bad provider: %d %s", rec.Code, rec.Body)
	}
	// The edge reads limit, order and purpose into the domain's types; what
	// it cannot read is a 400 naming the parameter, and the service is not
	// asked.
	fr.list = nil
	for query, param := range map[string]string{
		"limit=0": "limit", "limit=1001": "limit", "limit=1e2": "limit", "limit=+5": "limit", "limit=": "",
		"order=newest": "order", "purpose=homework": "purpose",
	} {
		rec := serve(h, request(http.MethodGet, "/api/v1/files?"+query))
		if param == "" {
			if rec.Code != http.StatusOK {
				t.Errorf("%s: %d, want 200 (an empty value is the default)", query, rec.Code)
			}
			continue
		}
		env := decodeEnvelope(t, rec)
		if fields, _ := env.Error.Metadata["fields"].(map[string]any); rec.Code != 400 || fields[param] == nil {
			t.Errorf("%s: %d %s, want 400 naming %s", query, rec.Code, rec.Body, param)
		}
	}
	if len(fr.list) != 1 {
		t.Errorf("the service was asked %d times, want once (for the valid query)", len(fr.list))
	}
	fr.list = nil
	serve(h, request(http.MethodGet, "/api/v1/files?purpose=batch&order=desc"))
	if len(fr.list) != 1 || fr.list[0].Purpose != files.PurposeBatch || fr.list[0].Order != files.OrderDesc {
		t.Errorf("List got %+v, want purpose batch, order desc", fr.list)
	}
}

func TestGetAndDeleteShapes(t *testing.T) {
	fr := &fakeReader{file: readFile}
	h := newReadAPI(t, fr)
	for _, tc := range []struct {
		method, ua, version, want string
	}{
		{http.MethodGet, "", "", `{"_shape":"service","id":"file-abc","type":"file","filename":"docs/report.txt","mime_type":"text/plain","size_bytes":5,"downloadable":true,"created_at":"2026-03-01T12:00:00.0000005Z"}`},
		{http.MethodGet, "OpenAI/Python 1.0", "", `{"_shape":"openai","id":"file-abc","object":"file","bytes":5,"created_at":1772366400,"filename":"docs/report.txt","purpose":"assistants","status":"processed"}`},
		{http.MethodDelete, "", "", `{"_shape":"service","id":"file-abc","type":"file_deleted"}`},
		{http.MethodDelete, "", "2023-06-01", `{"_shape":"anthropic","id":"file-abc","type":"file_deleted"}`},
		{http.MethodDelete, "OpenAI/JS 5", "", `{"_shape":"openai","id":"file-abc","object":"file","deleted":true}`},
	} {
		req := request(tc.method, "/api/v1/files/file-abc?workspace_id=w9", "User-Agent", tc.ua, "anthropic-version", tc.version)
		rec := serve(h, req)
		if rec.Code != http.StatusOK || rec.Body.String() != tc.want {
			t.Errorf("%s %s %s: %d %s\nwant %s", tc.method, tc.ua, tc.version, rec.Code, rec.Body, tc.want)
		}
	}
	for _, p := range fr.got {
		if p.ID != "file-abc" || p.WorkspaceID != "w9" || p.Key != standardKey {
			t.Errorf("service got %+v", p)
		}
	}
}

func TestFileRouteErrors(t *testing.T) {
	for _, tc := range []struct {
		name    string
		err     error
		status  int
		message string
		meta    string
	}{
		{"not found", fmt.Errorf("x: %w", files.ErrNotFound), 404, msgNotFound, "map[]"},
		{"not downloadable", files.ErrNotDownloadable, 400, "File is not downloadable", "map[]"},
		{"bad cursor", &files.ParamError{Param: "cursor", Problem: "not a cursor of this listing"}, 400, msgBadRequest, "map[fields:map[cursor:not a cursor of this listing]]"},
		{"forbidden workspace", files.ErrWorkspaceForbidden, 403, msgWorkspaceForbidden, "map[]"},
		{"service key writing", keys.ErrForbidden, 403, msgManagementOnly, "map[]"},
		{"provider throttled", &files.RateLimitedError{Provider: "openai", RetryAfter: 7 * time.Second}, 429, msgRateLimited, "map[]"},
		{"provider failed", fmt.Errorf("%w: 500", files.ErrProvider), 502, msgProviderError, "map[]"},
		{"provider rejected", fmt.Errorf("%w: 400", files.ErrProviderRejected), 400, msgBadRequest, "map[]"},
		{"storage down", fmt.Errorf("%w: s3", files.ErrStorageUnavailable), 503, msgUnavailable, "map[]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newReadAPI(t, &fakeReader{err: tc.err})
			for _, route := range []struct{ method, path string }{
				{"GET", "/api/v1/files"}, {"GET", "/api/v1/files/file-1"}, {"DELETE", "/api/v1/files/file-1"}, {"GET", "/api/v1/files/file-1/content"},
			} {
				rec := serve(h, request(route.method, route.path))
				env := decodeEnvelope(t, rec)
				meta := fmt.Sprint(env.Error.Metadata)
				if rec.Code != tc.status || env.Error.Message != tc.message || meta != tc.meta {
					t.Errorf("%s %s: %d %q %s, want %d %q %s", route.method, route.path, rec.Code, env.Error.Message, meta, tc.status, tc.message, tc.meta)
				}
				if rec.Header().Get("Content-Disposition") != "" {
					t.Errorf("%s %s: an error carries Content-Disposition", route.method, route.path)
				}
			}
		})
	}
	// The provider's own Retry-After is passed on.
	h := newReadAPI(t, &fakeReader{err: files.ErrProviderRateLimited})
	if rec := serve(h, request("GET", "/api/v1/files")); rec.Code != 429 || rec.Header().Get("Retry-After") == "" {
		t.Errorf("throttled: %d, Retry-After %q", rec.Code, rec.Header().Get("Retry-After"))
	}
}

func TestDownload(t *testing.T) {
	data := []byte("0123456789abcdefghij")
	f := readFile
	etag := `"` + f.ID + `"` // a file's bytes never change under its id
	f.Size = int64(len(data))
	cases := []struct {
		name    string
		headers []string
		status  int
		body    string
		want    map[string]string // headers
	}{
		{"whole", nil, 200, string(data), map[string]string{"Content-Length": "20", "Accept-Ranges": "bytes", "Content-Range": ""}},
		{"range", []string{"Range", "bytes=2-5"}, 206, "2345", map[string]string{"Content-Length": "4", "Content-Range": "bytes 2-5/20"}},
		{"open-ended", []string{"Range", "bytes=15-"}, 206, "fghij", map[string]string{"Content-Range": "bytes 15-19/20"}},
		{"past the end is cut", []string{"Range", "bytes=18-99"}, 206, "ij", map[string]string{"Content-Range": "bytes 18-19/20"}},
		{"suffix", []string{"Range", "bytes=-3"}, 206, "hij", map[string]string{"Content-Range": "bytes 17-19/20"}},
		{"suffix longer than the file", []string{"Range", "bytes=-300"}, 206, string(data), map[string]string{"Content-Range": "bytes 0-19/20"}},
		{"if-none-match", []string{"If-None-Match", `"x", ` + etag}, 304, "", map[string]string{"ETag": etag, "Content-Length": ""}},
		{"if-none-match weak", []string{"If-None-Match", "W/" + etag}, 304, "", nil},
		{"if-none-match star", []string{"If-None-Match", "*"}, 304, "", nil},
		{"if-none-match other", []string{"If-None-Match", `"other"`}, 200, string(data), nil},
		{"if-range matches", []string{"Range", "bytes=0-0", "If-Range", etag}, 206, "0", nil},
		{"if-range differs", []string{"Range", "bytes=0-0", "If-Range", `"old"`}, 200, string(data), nil},
		{"unsatisfiable", []string{"Range", "bytes=20-"}, 416, "", map[string]string{"Content-Range": "bytes */20"}},
		{"zero suffix", []string{"Range", "bytes=-0"}, 416, "", map[string]string{"Content-Range": "bytes */20"}},
		// RFC 9110: a last position of any length is clamped to the end;
		// the unit is case-insensitive; a first position past the end is
		// unsatisfiable however long it is written.
		{"huge last position", []string{"Range", "bytes=0-9223372036854775807"}, 206, string(data), map[string]string{"Content-Range": "bytes 0-19/20"}},
		{"last position past int64", []string{"Range", "bytes=3-99999999999999999999999"}, 206, string(data[3:]), map[string]string{"Content-Range": "bytes 3-19/20"}},
		{"huge suffix", []string{"Range", "bytes=-99999999999999999999"}, 206, string(data), map[string]string{"Content-Range": "bytes 0-19/20"}},
		{"unit in capitals", []string{"Range", "Bytes=0-4"}, 206, "01234", map[string]string{"Content-Range": "bytes 0-4/20"}},
		{"huge first position", []string{"Range", "bytes=99999999999999999999-"}, 416, "", map[string]string{"Content-Range": "bytes */20"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := newReadAPI(t, &fakeReader{file: f, content: data})
			rec := serve(h, request("GET", "/api/v1/files/file-abc/content", tc.headers...))
			if rec.Code != tc.status {
				t.Fatalf("status %d, want %d: %s", rec.Code, tc.status, rec.Body)
			}
			if tc.status < 300 && rec.Body.String() != tc.body {
				t.Errorf("body %q, want %q", rec.Body, tc.body)
			}
			if tc.status < 300 {
				for k, v := range map[string]string{"ETag": etag, "Content-Type": "text/plain", "Content-Disposition": `attachment; filename=report.txt`, "X-Content-Type-Options": "nosniff"} {
					if got := rec.Header().Get(k); got != v {
						t.Errorf("%s = %q, want %q", k, got, v)
					}
				}
			}
			if tc.status == 416 {
				if env := decodeEnvelope(t, rec); env.Error.Code != 416 {
					t.Errorf("416 envelope %+v", env)
				}
			}
			for k, v := range tc.want {
				if got := rec.Header().Get(k); got != v {
					t.Errorf("%s = %q, want %q", k, got, v)
				}
			}
		})
	}
	for _, bad := range []string{"bytes=5-2", "bytes=a-b", "items=0-1", "bytes=0-1,3-4", "bytes=-", "bytes=--1", "bytes= 1-2x", "bytesx0-1"} {
		h := newReadAPI(t, &fakeReader{file: f, content: data})
		rec := serve(h, request("GET", "/api/v1/files/file-abc/content", "Range", bad))
		env := decodeEnvelope(t, rec)
		if _, named := env.Error.Metadata["fields"].(map[string]any)["Range"]; rec.Code != 400 || !named {
			t.Errorf("Range %q: %d %s, want 400 naming Range", bad, rec.Code, rec.Body)
		}
	}
}

// TestFileContentTwoRangeFields: two Range fields are two ranges, refused as
// one field listing two is, never answered from the first alone; a
// differing If-Range still sends the file whole, whatever the Range says.
func TestFileContentTwoRangeFields(t *testing.T) {
	data := []byte("0123456789abcdefghij")
	f := readFile
	f.Size = int64(len(data))
	h := newReadAPI(t, &fakeReader{file: f, content: data})
	req := request("GET", "/api/v1/files/file-abc/content")
	req.Header["Range"] = []string{"bytes=0-1", "bytes=5-9"}
	rec := serve(h, req)
	if rec.Code != http.StatusBadRequest {
		t.Fatalf("status %d, want 400: %s", rec.Code, rec.Body)
	}
	if fields, _ := decodeEnvelope(t, rec).Error.Metadata["fields"].(map[string]any); fields["Range"] == nil {
		t.Errorf("the 400 does not name Range: %s", rec.Body)
	}
	req.Header.Set("If-Range", `"old"`)
	if rec := serve(h, req); rec.Code != http.StatusOK || rec.Body.String() != string(data) {
		t.Errorf("with a differing If-Range: %d %q, want the whole file", rec.Code, rec.Body)
	}
}

func TestDownloadOfAProviderStream(t *testing.T) {
	h := newReadAPI(t, &fakeReader{file: readFile, content: []byte("hello"), stream: true})
	rec := serve(h, request("GET", "/api/v1/files/file-abc/content", "Range", "bytes=0-1"))
	if rec.Code != 200 || rec.Body.String() != "hello" || rec.Header().Get("ETag") != "" || rec.Header().Get("Content-Disposition") == "" {
		t.Errorf("%d %q %v", rec.Code, rec.Body, rec.Header())
	}
}

func TestAttachmentNames(t *testing.T) {
	for name, want := range map[string]string{
		"a.txt":                 "a.txt",
		"folder/sub/b.csv":      "b.csv",
		`quote"and\back.txt`:    `quote"and\back.txt`,
		"résumé 2026.pdf":       "résumé 2026.pdf",
		"semi;colon=x.txt":      "semi;colon=x.txt",
		"日本語.md":                "日本語.md",
		"spaces and 'ticks'.md": "spaces and 'ticks'.md",
	} {
		v := attachment(name)
		typ, params, err := mime.ParseMediaType(v)
		if err != nil || typ != "attachment" || params["filename"] != want {
			t.Errorf("attachment(%q) = %q, parsed %q %v %v; want filename %q", name, v, typ, params, err, want)
		}
		if strings.ContainsAny(v, "\r\n") {
			t.Errorf("attachment(%q) = %q holds a line break", name, v)
		}
	}
}

// The IDOR matrix: every file route, with every kind of key, against the
// real read service over in-memory stores. A file of alice's default
// workspace is visible to her ordinary key of that workspace, to her
// management key and to her service key (read only); to nobody else.
func TestFileRoutesIDORMatrix(t *testing.T) {
	const (
		aliceWS   = "0b5d3c1e-0000-4000-8000-00000000000a"
		aliceWS2  = "0b5d3c1e-0000-4000-8000-00000000000b"
		bobWS     = "0b5d3c1e-0000-4000-8000-00000000000c"
		fileID    = "file-alice"
		otherFile = "file-alice-second"
	)
	keys := fakeAuth{
		"alice-std":  {ID: "k1", UserID: "alice", Role: keys.RoleStandard, WorkspaceID: aliceWS},
		"alice-mgmt": {ID: "k2", UserID: "alice", Role: keys.RoleManagement},
		"alice-svc":  {ID: "k3", UserID: "alice", Role: keys.RoleService},
		"alice-ws2":  {ID: "k4", UserID: "alice", Role: keys.RoleStandard, WorkspaceID: aliceWS2},
		"bob-std":    {ID: "k5", UserID: "bob", Role: keys.RoleStandard, WorkspaceID: bobWS},
		"bob-mgmt":   {ID: "k6", UserID: "bob", Role: keys.RoleManagement},
		"bob-svc":    {ID: "k7", UserID: "bob", Role: keys.RoleService},
	}
	type want struct{ list, get, content, del int }
	// list is the number of alice's default-workspace files the key sees
	// (-1: refused); the others are statuses.
	matrix := []struct {
		key  string
		ws   string // workspace_id sent
		want want
	}{
		{"alice-std", "", want{2, 200, 200, 200}},
		{"alice-mgmt", "", want{2, 200, 200, 200}},
		{"alice-mgmt", aliceWS, want{2, 200, 200, 200}},
		{"alice-svc", "", want{2, 200, 200, 403}},
		{"alice-svc", aliceWS, want{2, 200, 200, 403}},
		{"alice-ws2", "", want{0, 404, 404, 404}},
		{"alice-ws2", aliceWS, want{-403, 403, 403, 403}},
		{"bob-std", "", want{0, 404, 404, 404}},
		{"bob-std", aliceWS, want{-403, 403, 403, 403}},
		{"bob-mgmt", "", want{0, 404, 404, 404}},
		{"bob-mgmt", aliceWS, want{-403, 403, 403, 403}},
		{"bob-svc", "", want{0, 404, 404, 403}},
		{"bob-svc", aliceWS, want{-403, 403, 403, 403}},
	}
	for _, tc := range matrix {
		t.Run(tc.key+"/"+cmpOr(tc.ws, "default"), func(t *testing.T) {
			store := newMemCatalog()
			for _, id := range []string{fileID, otherFile} {
				store.put(files.Record{ID: id, WorkspaceID: aliceWS, Filename: id + ".txt", MimeType: "text/plain", Size: 5,
					ObjectKey: "ws/" + aliceWS + "/" + id, CreatedAt: time.Now()})
			}
			bucket := memBucket{"ws/" + aliceWS + "/" + fileID: []byte("hello")}
			rs, err := files.NewReadService(files.ReadConfig{Downloadable: true, CursorKey: bytes.Repeat([]byte{1}, 32)}, files.ReadDeps{
				Records: store, Bucket: bucket,
				Workspaces: memWorkspaces{aliceWS: "alice", aliceWS2: "alice", bobWS: "bob"},
			})
			if err != nil {
				t.Fatal(err)
			}
			api, _ := newTestAPI(t, Options{FileReader: rs, Auth: keys})
			h := api.Handler()
			q := ""
			if tc.ws != "" {
				q = "?workspace_id=" + tc.ws
			}
			call := func(method, path string) *httptest.ResponseRecorder {
				req := httptest.NewRequest(method, path+q, nil)
				req.Header.Set("Authorization", "Bearer "+tc.key)
				return serve(h, req)
			}
			rec := call("GET", "/api/v1/files")
			switch {
			case tc.want.list < 0 && rec.Code != -tc.want.list:
				t.Errorf("list: %d, want %d", rec.Code, -tc.want.list)
			case tc.want.list >= 0:
				var page struct{ Data []struct{ ID string } }
				_ = json.Unmarshal(rec.Body.Bytes(), &page)
				if rec.Code != 200 || len(page.Data) != tc.want.list {
					t.Errorf("list: %d with %d files, want 200 with %d", rec.Code, len(page.Data), tc.want.list)
				}
			}
			for _, c := range []struct {
				method, path string
				want         int
			}{
				{"GET", "/api/v1/files/" + fileID, tc.want.get},
				{"GET", "/api/v1/files/" + fileID + "/content", tc.want.content},
				{"DELETE", "/api/v1/files/" + fileID, tc.want.del},
			} {
				rec := call(c.method, c.path)
				if rec.Code != c.want {
					t.Errorf("%s %s: %d %s, want %d", c.method, c.path, rec.Code, rec.Body, c.want)
				}
			}
			// A 404 says nothing of why: an unknown id answers the same bytes.
			if tc.want.get == 404 {
				a, b := call("GET", "/api/v1/files/"+fileID), call("GET", "/api/v1/files/file-never-existed")
				if a.Body.String() != b.Body.String() {
					t.Errorf("another's file %s differs from an unknown id %s", a.Body, b.Body)
				}
			}
			if deleted := tc.want.del == 200; store.has(fileID) == deleted {
				t.Errorf("file still there = %v after a delete answered %d", store.has(fileID), tc.want.del)
			}
		})
	}
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// memRecords is files.Records in memory.
type memRecords struct {
	mu   sync.Mutex
	recs map[string]files.Record
}

func newMemCatalog() *memRecords { return &memRecords{recs: map[string]files.Record{}} }

func (m *memRecords) put(r files.Record) { m.recs[r.ID] = r }

func (m *memRecords) has(id string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	_, ok := m.recs[id]
	return ok
}

func (m *memRecords) ListFiles(_ context.Context, q files.ListQuery) (files.RecordPage, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var page files.RecordPage
	ids := make([]string, 0, len(m.recs))
	for id, r := range m.recs {
		if r.WorkspaceID == q.WorkspaceID {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	for _, id := range ids {
		if len(page.Records) == q.Limit {
			page.HasMore = true
			break
		}
		page.Records = append(page.Records, m.recs[id])
	}
	return page, nil
}

func (m *memRecords) FileByID(_ context.Context, ws, id string) (files.Record, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if r, ok := m.recs[id]; ok && r.WorkspaceID == ws {
		return r, nil
	}
	return files.Record{}, files.ErrNotFound
}

func (m *memRecords) FilePosition(ctx context.Context, ws, id string) (files.Position, error) {
	r, err := m.FileByID(ctx, ws, id)
	return files.Position{CreatedAt: r.CreatedAt, ID: r.ID}, err
}

func (m *memRecords) DeleteFile(ctx context.Context, ws, id string) (files.Record, error) {
	r, err := m.FileByID(ctx, ws, id)
	if err == nil {
		m.mu.Lock()
		delete(m.recs, id)
		m.mu.Unlock()
	}
	return r, err
}

// memWorkspaces: workspace id -> owner; a user's default is the first of
// theirs in id order.
type memWorkspaces map[string]string

func (w memWorkspaces) Get(_ context.Context, user, id string) (workspace.Workspace, error) {
	if w[id] != user {
		return workspace.Workspace{}, workspace.ErrNotFound
	}
	return workspace.Workspace{ID: id}, nil
}

func (w memWorkspaces) Default(_ context.Context, user string) (workspace.Workspace, error) {
	var ids []string
	for id, owner := range w {
		if owner == user {
			ids = append(ids, id)
		}
	}
	if len(ids) == 0 {
		return workspace.Workspace{}, errors.New("no workspace")
	}
	return workspace.Workspace{ID: slices.Min(ids)}, nil
}

// memBucket is a read-only blob.Bucket in memory.
type memBucket map[string][]byte

func (b memBucket) Upload(context.Context, string, io.Reader, int64, blob.UploadOptions) (blob.Object, error) {
	return blob.Object{}, errors.New("read only")
}

func (b memBucket) Compose(context.Context, string, []string, blob.UploadOptions) (blob.Object, error) {
	return blob.Object{}, errors.New("read only")
}

func (b memBucket) Open(_ context.Context, key string) (io.ReadCloser, error) {
	data, ok := b[key]
	if !ok {
		return nil, blob.ErrNotFound
	}
	return io.NopCloser(bytes.NewReader(data)), nil
}

func (b memBucket) OpenRange(_ context.Context, key string, offset, length int64) (io.ReadCloser, error) {
	data, ok := b[key]
	if !ok {
		return nil, blob.ErrNotFound
	}
	data = data[min(offset, int64(len(data))):]
	return io.NopCloser(bytes.NewReader(data[:min(length, int64(len(data)))])), nil
}

func (b memBucket) Stat(context.Context, string) (blob.Object, error) {
	return blob.Object{}, errors.New("unused")
}
func (b memBucket) Delete(context.Context, string) error { return nil }
func (b memBucket) List(context.Context, string) ([]string, error) {
	return nil, errors.New("unused")
}
func (b memBucket) ListAfter(context.Context, string, string, int) ([]string, error) {
	return nil, errors.New("unused")
}
func (b memBucket) Check(context.Context) error { return nil }
func (b memBucket) Close() error                { return nil }

func TestListAnthropicPaging(t *testing.T) {
	fr := &fakeReader{page: files.Page{Files: []files.File{readFile}, HasMore: true, Cursor: "c1.next"}}
	h := newReadAPI(t, fr)
	got := decodeJSON(t, serve(h, request("GET", "/api/v1/files?page=c1.prev", "anthropic-version", "2023-06-01")))
	if got["next_page"] != "c1.next" {
		t.Errorf("anthropic list = %v, want next_page", got)
	}
	if len(fr.list) != 1 || fr.list[0].Cursor != "c1.prev" {
		t.Errorf("page= reached the service as %+v, want the cursor", fr.list)
	}
	rec := serve(h, request("GET", "/api/v1/files?page=a&cursor=b"))
	if env := decodeEnvelope(t, rec); rec.Code != 400 || env.Error.Metadata["fields"].(map[string]any)["page"] == nil {
		t.Errorf("page and cursor: %d %s", rec.Code, rec.Body)
	}
}

func TestDownloadTypeFollowsAccept(t *testing.T) {
	for _, tc := range []struct{ accept, want string }{
		{"", "text/plain"},
		{"*/*", "text/plain"},
		{"text/*", "text/plain"},
		{"text/plain, application/json", "text/plain"},
		{"application/octet-stream", "application/octet-stream"},
		{"application/json, application/octet-stream;q=0.5", "application/octet-stream"},
		{"text/plain;q=0, application/octet-stream", "application/octet-stream"},
		{"application/json", "text/plain"}, // nothing acceptable: the file's own type
	} {
		if got := downloadType(tc.accept, "text/plain"); got != tc.want {
			t.Errorf("downloadType(%q) = %q, want %q", tc.accept, got, tc.want)
		}
	}
	h := newReadAPI(t, &fakeReader{file: readFile, content: []byte("hello")})
	rec := serve(h, request("GET", "/api/v1/files/file-abc/content", "Accept", "application/octet-stream"))
	if rec.Code != 200 || rec.Header().Get("Content-Type") != "application/octet-stream" {
		t.Errorf("download with Accept octet-stream: %d %q", rec.Code, rec.Header().Get("Content-Type"))
	}
}

// FuzzRange: any Range header against any size is either refused (400 or
// 416) or names bytes inside the file.
func FuzzRange(f *testing.F) {
	for _, s := range []string{"", "bytes=0-0", "bytes=-5", "bytes=5-", "bytes=3-2", "bytes=0-1,2-3", "bytes=99999999999999999999-"} {
		f.Add(s, int64(20))
	}
	f.Fuzz(func(t *testing.T, header string, size int64) {
		if size < 0 {
			size = -size
		}
		start, length, partial, err := parseRange(header, size)
		if err != nil {
			if !errors.Is(err, errBadRequest) && !errors.Is(err, errRangeNotSatisfiable) {
				t.Fatalf("parseRange(%q, %d) = %v", header, size, err)
			}
			return
		}
		if !partial && (start != 0 || length != size) {
			t.Fatalf("whole file as %d+%d of %d", start, length, size)
		}
		if partial && (start < 0 || length < 1 || start+length > size) {
			t.Fatalf("parseRange(%q, %d) = %d+%d, outside the file", header, size, start, length)
		}
	})
}
