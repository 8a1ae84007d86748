package gateway

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/aigateway/gateway/files"
	"github.com/aigateway/gateway/policy/limits"
)

// File reads, lists and deletes go by the default class; only uploads are
// held to the files class (whose burst is sized for uploads).
func TestFileReadsUseTheDefaultClass(t *testing.T) {
	rates := &RateLimits{
		Limiter: limits.NewLocalLimiter(limits.LocalOptions{}),
		Default: limits.Limit{Rate: 600, Per: time.Minute, Burst: 100},
		Files:   limits.Limit{Rate: 60, Per: time.Minute, Burst: 2},
	}
	api, _ := newTestAPI(t, Options{Limits: rates, FileReader: &fakeReader{}})
	h := api.Handler()
	for i := range 10 {
		rec := do(t, h, "GET", apiPrefix+"/files", "standard", nil)
		if rec.Code == http.StatusTooManyRequests || rec.Header().Get("RateLimit-Limit") != "100" {
			t.Fatalf("list %d: %d, RateLimit-Limit %q; want the default class (100)", i, rec.Code, rec.Header().Get("RateLimit-Limit"))
		}
	}
	rec := do(t, h, "POST", apiPrefix+"/files", "standard", nil)
	if rec.Header().Get("RateLimit-Limit") != "2" {
		t.Fatalf("upload: RateLimit-Limit %q, want the files class (2)", rec.Header().Get("RateLimit-Limit"))
	}
}

// The Anthropic SDKs read the request id from request-id.
func TestRequestIDHeaderForAnthropic(t *testing.T) {
	api, _ := newTestAPI(t, Options{})
	rec := httptest.NewRecorder()
	api.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/healthz", nil))
	if id := rec.Header().Get("X-Request-Id"); id == "" || rec.Header().Get("Request-Id") != id {
		t.Fatalf("X-Request-Id %q, request-id %q: want both, equal", id, rec.Header().Get("Request-Id"))
	}
}

// describingReader shows every file downloadable, as a deployment with
// files.downloadable does.
type describingReader struct{ fakeReader }

func (describingReader) Describe(rec files.Record) files.File {
	return files.File{Record: rec, Downloadable: true}
}

func TestUploadAnswerSaysDownloadableAsReadsDo(t *testing.T) {
	api, _ := newTestAPI(t, Options{FileReader: &describingReader{}})
	if !api.downloadable(files.Record{ID: "f"}) {
		t.Error("the upload's answer would say downloadable: false where a GET says true")
	}
	plain, _ := newTestAPI(t, Options{FileReader: &fakeReader{}})
	if plain.downloadable(files.Record{ID: "f"}) {
		t.Error("a reader that cannot describe files made uploads downloadable")
	}
}

// HEAD on the content route answers GET's headers without the bytes.
func TestHeadFileContent(t *testing.T) {
	data := []byte("0123456789")
	f := readFile
	f.Size = int64(len(data))
	h := newReadAPI(t, &fakeReader{file: f, content: data})
	rec := serve(h, request("HEAD", "/api/v1/files/file-abc/content", "Range", "bytes=2-5"))
	if rec.Code != http.StatusPartialContent || rec.Body.Len() != 0 || rec.Header().Get("Content-Length") != "4" ||
		rec.Header().Get("Content-Range") != "bytes 2-5/10" {
		t.Fatalf("HEAD: %d, %d body bytes, headers %v", rec.Code, rec.Body.Len(), rec.Header())
	}
	rec = serve(h, request("HEAD", "/api/v1/files/file-abc/content"))
	if rec.Code != http.StatusOK || rec.Body.Len() != 0 || rec.Header().Get("Content-Length") != "10" {
		t.Fatalf("HEAD: %d, %d body bytes, headers %v", rec.Code, rec.Body.Len(), rec.Header())
	}
}

// Item 8: the parameter at fault is named as the client named it, and a
// parameter given twice is refused.
func TestFileListNamesTheParameterAtFault(t *testing.T) {
	api, _ := newTestAPI(t, Options{FileReader: &pagingReader{}})
	h := api.Handler()
	for query, param := range map[string]string{
		"page=garbage":    "page",
		"limit=5&limit=6": "limit",
		"cursor=a&page=b": "page",
	} {
		rec := do(t, h, "GET", apiPrefix+"/files?"+query, "standard", nil)
		env := decodeEnvelope(t, rec)
		fields, _ := env.Error.Metadata["fields"].(map[string]any)
		if rec.Code != http.StatusBadRequest || fields[param] == nil {
			t.Errorf("?%s: %d %v, want 400 naming %s", query, rec.Code, env.Error.Metadata, param)
		}
	}
}

// pagingReader refuses every cursor, as the read service refuses one it
// did not make.
type pagingReader struct{ fakeReader }

func (*pagingReader) List(_ context.Context, p files.ListParams) (files.Page, error) {
	if p.Cursor != "" {
		return files.Page{}, &files.ParamError{Param: "cursor", Problem: "not a cursor of this listing"}
	}
	return files.Page{}, nil
}
