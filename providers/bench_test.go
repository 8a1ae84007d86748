package providers_test

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"testing"

	"github.com/aigateway/gateway/files"
	"github.com/aigateway/gateway/keys/seal"
	"github.com/aigateway/gateway/providers"
	"github.com/aigateway/gateway/providers/providertest"
	"go.uber.org/zap"
)

// BenchmarkList is the passthrough of GET /files?provider=...: one upstream
// list call, one caller at a time, for a page of 100 files (the edge's
// default limit). For each provider:
//
//   - standin: List against the provider's stand-in, which speaks the wire
//     protocol and builds every answer afresh (its own cost is in the
//     figure: the stand-in runs in this process);
//   - replay: List against a bare handler that replays the stand-in's
//     answer, bytes and headers, so little besides the client is measured;
//   - replay-bare: the same request sent with a bare http.Client and its
//     answer read and dropped: the HTTP round trip alone.
//
// replay minus replay-bare is what the gateway adds to a passthrough call.
// Compare ns/op and allocs/op; run with -count to interleave rounds, and
// with -cpuprofile to see where the time goes.
func BenchmarkList(b *testing.B) {
	const nFiles = 100
	for _, pc := range cases {
		stand := pc.standIn(b)
		for i := range nFiles {
			stand.Seed(providertest.SeedFile{Filename: fmt.Sprintf("f%03d.txt", i), Size: 10,
				Open: func() io.Reader { return strings.NewReader("0123456789") }})
		}
		key := seal.NewSecret(stand.Key)
		q := files.ProviderListQuery{Limit: nFiles}
		replay := replayServer(b, stand.BaseURL, listRequest(b, pc.name, stand.BaseURL, stand.Key, nFiles))

		list := func(baseURL string) func(b *testing.B) {
			return func(b *testing.B) {
				p, err := pc.provider(providers.Options{BaseURL: baseURL}, zap.NewNop())
				if err != nil {
					b.Fatal(err)
				}
				b.ReportAllocs()
				for b.Loop() {
					page, err := p.List(b.Context(), key, q)
					if err != nil {
						b.Fatal(err)
					}
					if len(page.Files) != nFiles {
						b.Fatalf("listed %d files, want %d", len(page.Files), nFiles)
					}
				}
			}
		}
		b.Run(pc.name+"/standin", list(stand.BaseURL))
		b.Run(pc.name+"/replay", list(replay.BaseURL))
		b.Run(pc.name+"/replay-bare", func(b *testing.B) {
			req := listRequest(b, pc.name, replay.BaseURL, stand.Key, nFiles)
			c := &http.Client{Transport: &http.Transport{}}
			defer c.CloseIdleConnections()
			b.ReportAllocs()
			for b.Loop() {
				resp, err := c.Do(req.Clone(b.Context()))
				if err != nil {
					b.Fatal(err)
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != http.StatusOK {
					b.Fatalf("replay answered %d", resp.StatusCode)
				}
			}
		})
	}
}

// listRequest is the request List sends for the first page of limit files,
// written out by hand.
func listRequest(b *testing.B, provider, baseURL, key string, limit int) *http.Request {
	b.Helper()
	var req *http.Request
	var err error
	switch provider {
	case providers.ProviderOpenAI:
		req, err = http.NewRequest(http.MethodGet, fmt.Sprintf("%s/files?limit=%d&order=desc", baseURL, limit), nil)
		if err == nil {
			req.Header.Set("Authorization", "Bearer "+key)
		}
	case providers.ProviderAnthropic:
		req, err = http.NewRequest(http.MethodGet, fmt.Sprintf("%s/v1/files?limit=%d", baseURL, limit), nil)
		if err == nil {
			req.Header.Set("x-api-key", key)
			req.Header.Set("anthropic-version", "2023-06-01")
			req.Header.Set("anthropic-beta", "files-api-2025-04-14")
		}
	default:
		b.Fatalf("no list request for %s", provider)
	}
	if err != nil {
		b.Fatal(err)
	}
	req.Header.Set("Accept", "application/json")
	return req
}

// replay is a server answering every request with one recorded answer.
type replay struct{ BaseURL string }

// replayServer sends req to the stand-in at baseURL once and starts a
// server that answers anything with the same status, headers and body,
// closed when the benchmark ends. Its BaseURL has the path of baseURL (/v1
// or none).
func replayServer(b *testing.B, baseURL string, req *http.Request) replay {
	b.Helper()
	u, err := url.Parse(baseURL)
	if err != nil {
		b.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		b.Fatal(err)
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil || resp.StatusCode != http.StatusOK {
		b.Fatalf("recording the answer: %d %v", resp.StatusCode, err)
	}
	header := resp.Header.Clone()
	header.Del("Transfer-Encoding")
	header.Set("Content-Length", strconv.Itoa(len(body)))
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		for k, v := range header {
			w.Header()[k] = v
		}
		w.WriteHeader(resp.StatusCode)
		_, _ = io.Copy(w, bytes.NewReader(body))
	}))
	b.Cleanup(srv.Close)
	return replay{BaseURL: srv.URL + u.Path}
}
