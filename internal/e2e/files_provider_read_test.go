package e2e

// The file routes with provider=openai|anthropic against the stand-ins:
// the workspace's stored key is used, the provider's files are listed,
// described, served and deleted in the negotiated shapes, and its failures
// map as resources.md says.

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aigateway/gateway/backends/providers/providertest"
)

func TestFileReadRoutesOnProviders(t *testing.T) {
	for _, p := range fileProviders() {
		t.Run(p.name, func(t *testing.T) {
			stand := p.new(t)
			cfg := fileTestConfig(t)
			storageCases()[0].configure(t, &cfg)
			p.set(&cfg, stand, 2*time.Second)
			e := newFileEnv(t, cfg, stand)
			key, ws := e.standardKey(t, "alice")
			service := e.g.newKey(t, "alice", "--service")
			bob, _ := e.standardKey(t, "bob")
			e.setProviderKey(t, ws, p.name, p.key)
			q := "provider=" + p.name

			// Two uploads through the gateway (recorded, charged to the
			// quota) and one file the provider holds from elsewhere, which
			// it lets us download.
			var uploaded []string
			for i := range 2 {
				data := fileText(300 + i)
				resp, body := e.upload(t, key, q, nil, "notes.txt", data)
				uploaded = append(uploaded, fileWantUploaded(t, resp, body, "service", "notes.txt", data, "text/plain"))
			}
			content := fileNoise(70_000, 9)
			seeded := stand.Seed(providertest.SeedFile{
				Filename: "model-output.jsonl", ContentType: "application/jsonl", Purpose: "batch_output",
				Size: int64(len(content)), Open: func() io.Reader { return bytes.NewReader(content) }, Downloadable: true,
			})

			t.Run("list", func(t *testing.T) {
				var got []string
				query := q + "&limit=2"
				for range 4 {
					l := e.list(t, key, query, nil)
					got = append(got, l.ids(t)...)
					if l.Cursor == nil {
						break
					}
					query = q + "&limit=2&cursor=" + *l.Cursor
				}
				want := []string{seeded.ID, uploaded[1], uploaded[0]}
				if !slices.Equal(got, want) {
					t.Errorf("walk = %v, want newest first %v", got, want)
				}
				if p.name == "openai" {
					oa := e.list(t, key, q+"&order=asc", http.Header{"User-Agent": {"OpenAI/JS 5"}})
					if ids := oa.ids(t); oa.Shape != "openai" || !slices.Equal(ids, []string{uploaded[0], uploaded[1], seeded.ID}) {
						t.Errorf("ascending openai list = %v", ids)
					}
				} else {
					// Anthropic offers no order: the request is refused, not
					// answered in the wrong order.
					resp, body := e.g.do(t, "GET", "/api/v1/files?"+q+"&order=asc", key, nil, nil)
					if resp.StatusCode != 400 {
						t.Errorf("anthropic order=asc = %d %s, want 400", resp.StatusCode, body)
					}
				}
				// Every request carried the workspace's key, never the caller's.
				for _, r := range stand.Requests() {
					auth := r.Header.Get("Authorization")
					if p.name == "anthropic" {
						auth = r.Header.Get("X-Api-Key")
					}
					if !strings.Contains(auth, p.key) || strings.Contains(strings.Join(slices.Concat(r.Header.Values("Authorization"), r.Header.Values("X-Api-Key")), " "), key) {
						t.Errorf("%s %s: auth %q, want the stored key and never the gateway key", r.Method, r.Path, auth)
					}
				}
				if got := e.list(t, service, q+"&workspace_id="+ws, nil).ids(t); len(got) != 3 {
					t.Errorf("service key lists %v", got)
				}
				resp, body := e.g.do(t, "GET", "/api/v1/files?"+q, bob, nil, nil)
				fileWantEnvelope(t, body, 400, "Invalid request parameters") // bob stored no key
				if resp.StatusCode != 400 {
					t.Errorf("bob's provider list = %d", resp.StatusCode)
				}
			})

			t.Run("metadata and content", func(t *testing.T) {
				resp, body := e.g.do(t, "GET", "/api/v1/files/"+seeded.ID+"?"+q, key, nil, nil)
				m := fileJSON(t, body)
				if resp.StatusCode != 200 || m["filename"] != "model-output.jsonl" || m["downloadable"] != true {
					t.Errorf("metadata = %d %s", resp.StatusCode, body)
				}
				resp, body = e.g.do(t, "GET", "/api/v1/files/file-unknown0123?"+q, key, nil, nil)
				if resp.StatusCode != 404 {
					t.Errorf("unknown provider file = %d %s", resp.StatusCode, body)
				}
				resp, body = e.g.do(t, "GET", "/api/v1/files/"+seeded.ID+"/content?"+q, key, nil, nil)
				if resp.StatusCode != 200 || !bytes.Equal(body, content) || resp.Header.Get("Content-Disposition") == "" {
					t.Errorf("content = %d, %d bytes, want %d", resp.StatusCode, len(body), len(content))
				}
				// Our own uploads are not downloadable at the provider (nor
				// here, by default): a 4xx, never a 5xx.
				resp, body = e.g.do(t, "GET", "/api/v1/files/"+uploaded[0]+"/content", key, nil, nil)
				if resp.StatusCode != 400 {
					t.Errorf("content of an upload = %d %s", resp.StatusCode, body)
				}
			})

			t.Run("failures map", func(t *testing.T) {
				defer stand.Reset()
				for _, tc := range []struct {
					name   string
					knob   func()
					status int
				}{
					{"throttled", func() { stand.FailReads(429); stand.RetryAfter("7") }, 429},
					{"key refused", func() { stand.FailReads(401) }, 502},
					{"server error", func() { stand.FailReads(503) }, 502},
					{"timeout", func() { stand.HangReads() }, 504},
				} {
					stand.Reset()
					tc.knob()
					resp, body := e.g.do(t, "GET", "/api/v1/files?"+q, key, nil, nil)
					if resp.StatusCode != tc.status {
						t.Errorf("%s: %d %s, want %d", tc.name, resp.StatusCode, body, tc.status)
					}
					if tc.status == 429 && resp.Header.Get("Retry-After") != "7" {
						t.Errorf("throttled: Retry-After %q, want the provider's 7", resp.Header.Get("Retry-After"))
					}
					if strings.Contains(string(body), p.key) {
						t.Errorf("%s: the answer holds the stored key", tc.name)
					}
				}
				stand.Reset()
				hit := false
				elsewhere := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { hit = true }))
				defer elsewhere.Close()
				stand.RedirectReadsTo(elsewhere.URL)
				resp, _ := e.g.do(t, "GET", "/api/v1/files/"+seeded.ID+"?"+q, key, nil, nil)
				if resp.StatusCode != 502 || hit {
					t.Errorf("redirect: %d, followed %v; want 502, not followed", resp.StatusCode, hit)
				}
			})

			t.Run("delete removes the provider file, our record and its charge", func(t *testing.T) {
				before, _ := e.store.StoredBytes(t.Context(), ws)
				size := e.record(t, ws, uploaded[0]).Size
				resp, body := e.g.do(t, "DELETE", "/api/v1/files/"+uploaded[0]+"?"+q, service, nil, nil)
				if resp.StatusCode != 403 {
					t.Errorf("service key delete = %d %s", resp.StatusCode, body)
				}
				resp, body = e.g.do(t, "DELETE", "/api/v1/files/"+uploaded[0]+"?"+q, key, nil, http.Header{"anthropic-version": {"2023-06-01"}})
				if resp.StatusCode != 200 || string(body) != `{"_shape":"anthropic","id":"`+uploaded[0]+`","type":"file_deleted"}` {
					t.Errorf("delete = %d %s", resp.StatusCode, body)
				}
				if _, ok := stand.File(uploaded[0]); ok {
					t.Error("the provider still holds the file")
				}
				if after, _ := e.store.StoredBytes(t.Context(), ws); after != before-size {
					t.Errorf("stored bytes %d -> %d, want %d less", before, after, size)
				}
				resp, _ = e.g.do(t, "DELETE", "/api/v1/files/"+uploaded[0]+"?"+q, key, nil, nil)
				if resp.StatusCode != 404 {
					t.Errorf("second delete = %d", resp.StatusCode)
				}
				// The plain route finds the upload's record and deletes it
				// where its bytes are.
				resp, body = e.g.do(t, "DELETE", "/api/v1/files/"+uploaded[1], key, nil, nil)
				if _, ok := stand.File(uploaded[1]); resp.StatusCode != 200 || ok {
					t.Errorf("plain delete of a provider upload = %d %s, provider still holds it: %v", resp.StatusCode, body, ok)
				}
				if n, _ := e.store.StoredBytes(t.Context(), ws); n != 0 {
					t.Errorf("stored bytes = %d after every upload was deleted", n)
				}
			})
		})
	}
}
