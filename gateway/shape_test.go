package gateway

import (
	"encoding/json"
	"net/http/httptest"
	"os"
	"testing"
	"time"

	"github.com/aigateway/gateway/files"
)

// sdkHeaders reads testdata/sdk_headers.json: the headers real clients
// send with an upload (see each entry's "source").
func sdkHeaders(t *testing.T) map[string]map[string]string {
	t.Helper()
	data, err := os.ReadFile("testdata/sdk_headers.json")
	if err != nil {
		t.Fatal(err)
	}
	var sets map[string]struct {
		Source  string            `json:"source"`
		Headers map[string]string `json:"headers"`
	}
	if err := json.Unmarshal(data, &sets); err != nil {
		t.Fatal(err)
	}
	out := make(map[string]map[string]string, len(sets))
	for name, s := range sets {
		out[name] = s.Headers
	}
	return out
}

func TestNegotiateShapeOfRealClients(t *testing.T) {
	want := map[string]shape{
		"openai-node":      shapeOpenAI,
		"openai-python":    shapeOpenAI,
		"anthropic-node":   shapeAnthropic,
		"anthropic-python": shapeAnthropic,
		"service-sdk-node": shapeService,
		"curl":             shapeService,
	}
	sets := sdkHeaders(t)
	if len(sets) != len(want) {
		t.Errorf("%d header sets in testdata, %d expectations: give every set one", len(sets), len(want))
	}
	for name, headers := range sets {
		t.Run(name, func(t *testing.T) {
			r := httptest.NewRequest("POST", "/api/v1/files", nil)
			for k, v := range headers {
				r.Header.Set(k, v)
			}
			if got := negotiateShape(r); got != want[name] {
				t.Errorf("negotiateShape = %q, want %q", got, want[name])
			}
		})
	}
}

func TestNegotiateShapeRule(t *testing.T) {
	tests := []struct {
		name    string
		headers map[string]string
		want    shape
	}{
		{"nothing", nil, shapeService},
		{"anthropic-version alone", map[string]string{"anthropic-version": "2023-06-01"}, shapeAnthropic},
		{"Anthropic user agent alone", map[string]string{"User-Agent": "Anthropic/Python 0.69.0"}, shapeAnthropic},
		{"anthropic-version wins over an OpenAI user agent", map[string]string{"anthropic-version": "2023-06-01", "User-Agent": "OpenAI/JS 6.49.0"}, shapeAnthropic},
		{"OpenAI user agent", map[string]string{"User-Agent": "OpenAI/Python 1.109.1"}, shapeOpenAI},
		{"the async OpenAI client", map[string]string{"User-Agent": "AsyncOpenAI/Python 2.54.0"}, shapeOpenAI},
		{"the Azure OpenAI client", map[string]string{"User-Agent": "AzureOpenAI/Python 2.54.0"}, shapeOpenAI},
		{"the async Azure OpenAI client", map[string]string{"User-Agent": "AsyncAzureOpenAI/Python 2.54.0"}, shapeOpenAI},
		{"Stainless headers say nothing", map[string]string{"X-Stainless-Lang": "js", "X-Stainless-Package-Version": "6.49.0"}, shapeService},
		{"prefix only, case as the SDKs send it", map[string]string{"User-Agent": "openai/JS 6.49.0"}, shapeService},
		{"the name inside another agent", map[string]string{"User-Agent": "my-app (OpenAI/JS)"}, shapeService},
		{"empty anthropic-version", map[string]string{"anthropic-version": "", "User-Agent": "OpenAI/JS 6.49.0"}, shapeOpenAI},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := httptest.NewRequest("GET", "/api/v1/files", nil)
			for k, v := range tt.headers {
				r.Header.Set(k, v)
			}
			if got := negotiateShape(r); got != tt.want {
				t.Errorf("negotiateShape = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestFileShapeFields(t *testing.T) {
	rec := files.Record{
		ID: "file-x", Filename: "a/b.txt", MimeType: "text/plain", Size: 7,
		CreatedAt: time.Date(2026, 1, 2, 3, 4, 5, 6000, time.FixedZone("x", 3600)),
	}
	tests := []struct {
		name         string
		s            shape
		rec          files.Record
		downloadable bool
		want         string
	}{
		{"service", shapeService, rec, false,
			`{"_shape":"service","id":"file-x","type":"file","filename":"a/b.txt","mime_type":"text/plain","size_bytes":7,"downloadable":false,"created_at":"2026-01-02T02:04:05.000006Z"}`},
		{"anthropic, downloadable", shapeAnthropic, rec, true,
			`{"_shape":"anthropic","id":"file-x","type":"file","filename":"a/b.txt","mime_type":"text/plain","size_bytes":7,"downloadable":true,"created_at":"2026-01-02T02:04:05.000006Z"}`},
		{"openai, no purpose stored", shapeOpenAI, rec, false,
			`{"_shape":"openai","id":"file-x","object":"file","bytes":7,"created_at":1767319445,"filename":"a/b.txt","purpose":"user_data","status":"processed"}`},
		{"openai, purpose stored", shapeOpenAI, func() files.Record { r := rec; r.Purpose = files.PurposeVision; return r }(), false,
			`{"_shape":"openai","id":"file-x","object":"file","bytes":7,"created_at":1767319445,"filename":"a/b.txt","purpose":"vision","status":"processed"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := json.Marshal(fileShape(tt.s, tt.rec, tt.downloadable))
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tt.want {
				t.Errorf("got  %s\nwant %s", got, tt.want)
			}
		})
	}
}
