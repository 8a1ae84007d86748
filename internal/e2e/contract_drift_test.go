package e2e

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/aigateway/gateway/gateway/openapi"
	"github.com/getkin/kin-openapi/openapi3"
)

// The checker refuses answers that drift from the document: each drifted
// answer below is a handler bug the suites must catch, and each sound one
// must pass (else the checker refuses everything and proves nothing).
func TestContractCatchesDrift(t *testing.T) {
	c, err := newContract()
	if err != nil {
		t.Fatal(err)
	}
	const ws = `{"id":"0b7e1c2e-6f1a-4d57-9a39-2f3f0f6a1f10","name":"R","slug":"r","description":"",` +
		`"default_text_model":null,"default_image_model":null,"default_provider_sort":null,` +
		`"default_guardrail_id":"","created_by":"alice","created_at":"2026-11-23T12:00:00Z","updated_at":null,` +
		`"include_byok_in_budgets":false,"io_logging_api_key_ids":null,"io_logging_sampling_rate":1,` +
		`"is_data_discount_logging_enabled":true,"is_observability_broadcast_enabled":false,"is_observability_io_logging_enabled":false}`
	const file = `{"_shape":"service","id":"file-1","type":"file","filename":"a.txt","mime_type":"text/plain","size_bytes":5,"downloadable":false,"created_at":"2026-11-23T12:00:00Z"}`
	const openaiFile = `{"_shape":"openai","id":"file-1","object":"file","bytes":5,"created_at":1790000000,"filename":"a.txt","purpose":"user_data","status":"processed"}`
	cases := []struct {
		name, method, path string
		status             int
		header             map[string]string
		body               string
		ok                 bool
	}{
		{"sound workspace", "GET", "/api/v1/workspaces/r", 200, nil, `{"data":` + ws + `}`, true},
		{"sound created workspace", "POST", "/api/v1/workspaces", 201, nil, `{"data":` + ws + `}`, true},
		{"sound error", "GET", "/api/v1/workspaces/r", 404, nil, `{"error":{"code":404,"message":"Resource not found","metadata":null}}`, true},
		{"sound service file", "POST", "/api/v1/files", 200, nil, file, true},
		{"sound openai file", "POST", "/api/v1/files", 200, nil, openaiFile, true},
		{"sound unknown route", "GET", "/api/v1/nothing", 404, nil, `{"error":{"code":404,"message":"Resource not found","metadata":null}}`, true},
		{"sound rate-limit headers", "GET", "/api/v1/models", 200, map[string]string{"RateLimit-Limit": "600", "RateLimit-Remaining": "599", "RateLimit-Reset": "1"}, `{"data":[],"links":{"next":null},"total_count":0}`, true},

		{"wrong field type", "GET", "/api/v1/workspaces/r", 200, nil, `{"data":` + strings.Replace(ws, `"io_logging_sampling_rate":1`, `"io_logging_sampling_rate":"1"`, 1) + `}`, false},
		{"missing required field", "GET", "/api/v1/workspaces/r", 200, nil, `{"data":` + strings.Replace(ws, `"created_by":"alice",`, ``, 1) + `}`, false},
		{"undocumented field", "GET", "/api/v1/workspaces/r", 200, nil, `{"data":` + strings.Replace(ws, `"name":"R"`, `"name":"R","owner":"x"`, 1) + `}`, false},
		{"undocumented status", "GET", "/api/v1/workspaces/r", 418, nil, `{"error":{"code":418,"message":"teapot","metadata":null}}`, false},
		{"undocumented 304", "GET", "/api/v1/workspaces/r", 304, nil, ``, false},
		{"error without its envelope", "GET", "/api/v1/workspaces/r", 404, nil, `{"message":"not found"}`, false},
		{"file of no shape", "POST", "/api/v1/files", 200, nil, strings.Replace(file, `"_shape":"service",`, ``, 1), false},
		{"file of the wrong shape's fields", "POST", "/api/v1/files", 200, nil, strings.Replace(openaiFile, `"openai"`, `"service"`, 1), false},
		{"non-integer rate-limit header", "GET", "/api/v1/models", 200, map[string]string{"RateLimit-Remaining": "lots"}, `{"data":[],"links":{"next":null},"total_count":0}`, false},
		{"unknown route answered 200", "GET", "/api/v1/nothing", 200, nil, `{}`, false},
		{"a JSON answer that is not JSON", "GET", "/api/v1/models", 200, nil, `{"data":[`, false},
		{"an answer without X-Request-Id", "GET", "/api/v1/models", 200, map[string]string{"X-Request-Id": ""}, `{"data":[],"links":{"next":null},"total_count":0}`, false},
		{"a refused connection without X-Request-Id", "GET", "/api/v1/models", 503, map[string]string{"X-Request-Id": "", "Retry-After": "1"}, `{"error":{"code":503,"message":"Service temporarily unavailable","metadata":null}}`, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			req, err := http.NewRequest(tc.method, "http://gateway.test"+tc.path, nil)
			if err != nil {
				t.Fatal(err)
			}
			resp := &http.Response{StatusCode: tc.status, Header: http.Header{"X-Request-Id": {"r1"}}, Body: io.NopCloser(strings.NewReader(tc.body))}
			if tc.body != "" {
				resp.Header.Set("Content-Type", "application/json")
			}
			for k, v := range tc.header {
				if v == "" {
					resp.Header.Del(k)
				} else {
					resp.Header.Set(k, v)
				}
			}
			err = c.check(req, resp)
			if tc.ok && err != nil {
				t.Fatalf("a sound answer was refused: %v", err)
			}
			if err != nil {
				t.Logf("refused: %v", err)
			}
			if !tc.ok && err == nil {
				t.Fatal("a drifted answer was accepted")
			}
			// The caller still reads the body it would have read.
			if b, _ := io.ReadAll(resp.Body); string(b) != tc.body {
				t.Errorf("body after the check = %q, want %q", b, tc.body)
			}
		})
	}
}

// recordingTB stands in for the test a gateway belongs to, keeping the
// failures reported to it.
type recordingTB struct {
	testing.TB
	mu     sync.Mutex
	failed []string
}

func (r *recordingTB) Errorf(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.failed = append(r.failed, fmt.Sprintf(format, args...))
}

// The harness's client fails the test that got a drifted answer, and hands
// the answer on untouched.
func TestContractTransportFailsTheTest(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("X-Request-Id", "r1")
		if r.URL.Path == "/api/v1/models" {
			_, _ = io.WriteString(w, `{"data":[],"links":{"next":null},"total_count":0}`)
			return
		}
		_, _ = io.WriteString(w, `{"data":{"id":7}}`) // a Workspace with a numeric id and nothing else
	}))
	defer srv.Close()
	rec := &recordingTB{TB: t}
	c := contractClient(rec, nil)
	for _, tc := range []struct {
		path  string
		fails bool
	}{{"/api/v1/models", false}, {"/api/v1/workspaces/w", true}} {
		rec.failed = nil
		resp, err := c.Get(srv.URL + tc.path)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if len(body) == 0 {
			t.Errorf("%s: the caller got no body", tc.path)
		}
		if got := len(rec.failed) > 0; got != tc.fails {
			t.Errorf("%s: test failed = %v (%q), want %v", tc.path, got, rec.failed, tc.fails)
		}
	}
}

// The document is served without a key, and it is the one the checker uses.
func TestOpenAPIDocumentServed(t *testing.T) {
	g := startGateway(t, testConfig(t))
	resp, body := g.do(t, http.MethodGet, "/api/v1/openapi.json", "", nil, nil)
	if resp.StatusCode != http.StatusOK || !bytes.Equal(body, openapi.Document) {
		t.Fatalf("GET /api/v1/openapi.json = %d, %d bytes; want 200 and the embedded document", resp.StatusCode, len(body))
	}
	if _, err := openapi3.NewLoader().LoadFromData(body); err != nil {
		t.Errorf("the served document does not load: %v", err)
	}
}
