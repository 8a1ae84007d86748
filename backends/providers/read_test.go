package providers_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"net/url"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/aigateway/gateway/backends/providers"
	"github.com/aigateway/gateway/backends/providers/providertest"
	"github.com/aigateway/gateway/files"
	"github.com/aigateway/gateway/policy/keys/seal"
	"go.uber.org/zap/zapcore"
)

// bound is the harness's provider behind a Keyring, as the file service
// sees it: the mapping of answers to files' sentinels is tested through it.
func (h *harness) bound(t *testing.T) files.Provider {
	t.Helper()
	sealer, err := seal.NewSealer(bytes.Repeat([]byte{9}, seal.KeySize))
	if err != nil {
		t.Fatal(err)
	}
	sealed, err := sealer.Seal("ws-1", h.name, h.key)
	if err != nil {
		t.Fatal(err)
	}
	p, err := providers.NewKeyring(sealer, h.p).Open("ws-1", h.name, sealed)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// seed stores n small downloadable files, oldest first, one second apart.
func seed(h *harness, n int) []providertest.StoredFile {
	base := time.Now().Add(-time.Hour).Truncate(time.Second)
	out := make([]providertest.StoredFile, n)
	for i := range out {
		content := fmt.Sprintf("content of file %d", i)
		out[i] = h.stand.Seed(providertest.SeedFile{
			Filename: fmt.Sprintf("f%d.txt", i), ContentType: "text/plain", Purpose: "batch",
			Size: int64(len(content)), Open: func() io.Reader { return strings.NewReader(content) },
			Downloadable: true, CreatedAt: base.Add(time.Duration(i) * time.Second),
		})
	}
	return out
}

func ids(fs []files.ProviderFileInfo) []string {
	out := make([]string, len(fs))
	for i, f := range fs {
		out[i] = f.ID
	}
	return out
}

// assertAuthorized checks the request carried the key and protocol headers
// of its provider, and nothing of the other's, and no body.
func assertAuthorized(t *testing.T, h *harness, req providertest.Request) {
	t.Helper()
	switch h.name {
	case providers.ProviderOpenAI:
		if req.Header.Get("Authorization") != "Bearer "+h.stand.Key || req.Header.Get("x-api-key") != "" {
			t.Fatalf("%s %s headers %v", req.Method, req.Path, req.Header)
		}
	case providers.ProviderAnthropic:
		if req.Header.Get("x-api-key") != h.stand.Key || req.Header.Get("anthropic-version") != "2023-06-01" ||
			req.Header.Get("anthropic-beta") != "files-api-2025-04-14" || req.Header.Get("Authorization") != "" {
			t.Fatalf("%s %s headers %v", req.Method, req.Path, req.Header)
		}
	}
	if req.ContentLength > 0 || len(req.TransferEncoding) > 0 {
		t.Fatalf("%s %s carried a body", req.Method, req.Path)
	}
}

func TestListPagesWithEachProvidersParameters(t *testing.T) {
	for _, pc := range cases {
		t.Run(pc.name, func(t *testing.T) {
			h := newHarness(t, pc, providers.Options{})
			stored := seed(h, 5)
			p := h.bound(t)
			newest := []string{stored[4].ID, stored[3].ID, stored[2].ID, stored[1].ID, stored[0].ID}

			// Walk newest first, two at a time.
			var walked []string
			q := files.ProviderListQuery{Limit: 2}
			for range 5 {
				page, err := p.List(t.Context(), q)
				if err != nil {
					t.Fatal(err)
				}
				walked = append(walked, ids(page.Files)...)
				if !page.HasMore {
					break
				}
				q.AfterID = page.Files[len(page.Files)-1].ID
			}
			if fmt.Sprint(walked) != fmt.Sprint(newest) {
				t.Fatalf("walked %v, want %v", walked, newest)
			}
			reqs := h.stand.Requests()
			if len(reqs) != 3 {
				t.Fatalf("%d requests for 3 pages", len(reqs))
			}
			want := map[string][]url.Values{
				providers.ProviderOpenAI: {
					{"limit": {"2"}, "order": {"desc"}},
					{"limit": {"2"}, "order": {"desc"}, "after": {newest[1]}},
					{"limit": {"2"}, "order": {"desc"}, "after": {newest[3]}},
				},
				providers.ProviderAnthropic: {
					{"limit": {"2"}},
					{"limit": {"2"}, "after_id": {newest[1]}},
					{"limit": {"2"}, "after_id": {newest[3]}},
				},
			}[h.name]
			for i, req := range reqs {
				if req.Method != http.MethodGet || req.Path != "/v1/files" || req.Status != http.StatusOK {
					t.Fatalf("%s %s -> %d", req.Method, req.Path, req.Status)
				}
				if req.Query.Encode() != want[i].Encode() {
					t.Fatalf("page %d query %v, want %v", i, req.Query, want[i])
				}
				assertAuthorized(t, h, req)
			}

			// Backwards from the oldest: the two just newer, still newest first.
			page, err := p.List(t.Context(), files.ProviderListQuery{Limit: 2, BeforeID: stored[0].ID})
			if err != nil {
				t.Fatal(err)
			}
			if got := ids(page.Files); fmt.Sprint(got) != fmt.Sprint(newest[2:4]) || !page.HasMore {
				t.Fatalf("before %s: %v has_more %v, want %v and more", stored[0].ID, got, page.HasMore, newest[2:4])
			}

			// Oldest first: OpenAI's order=asc; Anthropic offers no such order.
			before := len(h.stand.Requests())
			page, err = p.List(t.Context(), files.ProviderListQuery{Limit: 3, Ascending: true})
			switch h.name {
			case providers.ProviderOpenAI:
				if err != nil || fmt.Sprint(ids(page.Files)) != fmt.Sprint([]string{stored[0].ID, stored[1].ID, stored[2].ID}) || !page.HasMore {
					t.Fatalf("ascending: %v %v", ids(page.Files), err)
				}
			case providers.ProviderAnthropic:
				if !errors.Is(err, files.ErrProviderRejected) || !errors.Is(err, providers.ErrUnsupportedQuery) {
					t.Fatalf("ascending on anthropic: %v, want ErrProviderRejected", err)
				}
				if len(h.stand.Requests()) != before {
					t.Fatal("a request was sent for an order the provider does not offer")
				}
			}
		})
	}
}

func TestListDecodesFiles(t *testing.T) {
	for _, pc := range cases {
		t.Run(pc.name, func(t *testing.T) {
			h := newHarness(t, pc, providers.Options{})
			up, err := h.p.Upload(t.Context(), h.key, providers.File{Name: "notes é.txt", ContentType: "text/plain", Body: strings.NewReader("hello")})
			if err != nil {
				t.Fatal(err)
			}
			page, err := h.bound(t).List(t.Context(), files.ProviderListQuery{Limit: 1000})
			if err != nil {
				t.Fatal(err)
			}
			if len(page.Files) != 1 || page.HasMore {
				t.Fatalf("page %+v", page)
			}
			f := page.Files[0]
			if f.ID != up.ID || f.Filename != "notes é.txt" || f.Size != 5 || !f.CreatedAt.Equal(up.CreatedAt.Truncate(time.Second)) && !f.CreatedAt.Equal(up.CreatedAt) {
				t.Fatalf("file %+v, uploaded %+v", f, up)
			}
			// Neither provider serves back what a client uploaded.
			if f.Downloadable {
				t.Fatalf("uploaded file listed downloadable: %+v", f)
			}
			switch h.name {
			case providers.ProviderOpenAI:
				if f.Purpose != "user_data" || f.MimeType != "" {
					t.Fatalf("file %+v", f)
				}
			case providers.ProviderAnthropic:
				if f.Purpose != "" || f.MimeType != "text/plain" {
					t.Fatalf("file %+v", f)
				}
			}
			if q := h.stand.Requests()[1].Query.Get("limit"); q != "1000" {
				t.Fatalf("limit %s", q)
			}
		})
	}
}

func TestListCapsLimit(t *testing.T) {
	for _, pc := range cases {
		t.Run(pc.name, func(t *testing.T) {
			h := newHarness(t, pc, providers.Options{})
			p := h.bound(t)
			for _, tt := range []struct{ limit, sent int }{{0, 100}, {-3, 100}, {5000, 1000}, {1, 1}} {
				if _, err := p.List(t.Context(), files.ProviderListQuery{Limit: tt.limit}); err != nil {
					t.Fatal(err)
				}
				reqs := h.stand.Requests()
				if got := reqs[len(reqs)-1].Query.Get("limit"); got != fmt.Sprint(tt.sent) {
					t.Fatalf("limit %d sent as %s, want %d", tt.limit, got, tt.sent)
				}
			}
			for _, q := range []files.ProviderListQuery{
				{AfterID: "file-a", BeforeID: "file-b"},
				{AfterID: "../../etc"},
				{BeforeID: "a b"},
			} {
				if _, err := p.List(t.Context(), q); !errors.Is(err, files.ErrProviderRejected) {
					t.Fatalf("List(%+v) = %v, want ErrProviderRejected", q, err)
				}
			}
			if len(h.stand.Requests()) != 4 {
				t.Fatal("a refused query was sent")
			}
		})
	}
}

func TestStat(t *testing.T) {
	for _, pc := range cases {
		t.Run(pc.name, func(t *testing.T) {
			h := newHarness(t, pc, providers.Options{})
			stored := seed(h, 1)[0]
			p := h.bound(t)
			info, err := p.Stat(t.Context(), stored.ID)
			if err != nil {
				t.Fatal(err)
			}
			if info.ID != stored.ID || info.Filename != stored.Filename || info.Size != stored.Size ||
				!info.CreatedAt.Equal(stored.CreatedAt) || !info.Downloadable {
				t.Fatalf("Stat = %+v, stored %+v", info, stored)
			}
			req := h.stand.Requests()[0]
			if req.Method != http.MethodGet || req.Path != "/v1/files/"+stored.ID || len(req.Query) != 0 || req.Status != http.StatusOK {
				t.Fatalf("%s %s?%v -> %d", req.Method, req.Path, req.Query, req.Status)
			}
			assertAuthorized(t, h, req)

			_, err = p.Stat(t.Context(), "file-unknown0123")
			if !errors.Is(err, files.ErrNotFound) {
				t.Fatalf("unknown id: %v, want files.ErrNotFound", err)
			}
			assertProviderError(t, h, err, http.StatusNotFound, false)

			for _, id := range []string{"", ".", "..", "../v1/files", "a/b", "file%2F", strings.Repeat("a", 200), "a b", "é"} {
				if _, err := p.Stat(t.Context(), id); !errors.Is(err, files.ErrNotFound) || !errors.Is(err, providers.ErrInvalidFileID) {
					t.Fatalf("Stat(%q) = %v, want ErrNotFound without asking", id, err)
				}
			}
			if len(h.stand.Requests()) != 2 {
				t.Fatal("an id no provider issues was sent")
			}
		})
	}
}

// countingReader counts what the stand-in read of a download's source.
type countingReader struct {
	r io.Reader
	n *atomic.Int64
}

func (c countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n.Add(int64(n))
	return n, err
}

// TestContentStreams: the answer's body is handed over as it arrives. The
// stand-in's source of 1 GiB is read only as far as the client reads plus
// what the socket buffers hold, and closing the body ends the transfer.
func TestContentStreams(t *testing.T) {
	for _, pc := range cases {
		t.Run(pc.name, func(t *testing.T) {
			h := newHarness(t, pc, providers.Options{})
			const size = 1 << 30
			var produced atomic.Int64
			f := h.stand.Seed(providertest.SeedFile{
				Filename: "huge.bin", ContentType: "application/octet-stream", Size: size, Downloadable: true,
				Open: func() io.Reader { return countingReader{io.LimitReader(rand.NewChaCha8([32]byte{7}), size), &produced} },
			})
			c, err := h.bound(t).Content(t.Context(), f.ID)
			if err != nil {
				t.Fatal(err)
			}
			if c.Length != size {
				t.Fatalf("Length %d", c.Length)
			}
			const read = 1 << 20
			if _, err := io.CopyN(io.Discard, c.Body, read); err != nil {
				t.Fatal(err)
			}
			// Loopback socket buffers hold a few MiB at most; anything near
			// the size means the body was fetched ahead of the reader.
			const slack = 64 << 20
			if got := produced.Load(); got > read+slack {
				t.Fatalf("stand-in produced %d bytes while %d were read", got, read)
			}
			if err := c.Body.Close(); err != nil {
				t.Fatal(err)
			}
			req := h.stand.AwaitRequests(t, 1)[0]
			if req.SentBytes >= size || req.SentBytes > read+slack {
				t.Fatalf("stand-in sent %d bytes after the body was closed at %d", req.SentBytes, read)
			}
			assertAuthorized(t, h, req)
			if req.Path != "/v1/files/"+f.ID+"/content" || req.Method != http.MethodGet {
				t.Fatalf("%s %s", req.Method, req.Path)
			}
		})
	}
}

// TestContentMemoryIsBounded downloads a file of memoryTestSize and checks
// the bytes allocated by the whole process (client and stand-in) stay far
// below its size, and that every byte arrived.
func TestContentMemoryIsBounded(t *testing.T) {
	if testing.Short() {
		t.Skip("moves 16 MiB")
	}
	const size = memoryTestSize
	_, sum := body(size, 5)
	for _, pc := range cases {
		t.Run(pc.name, func(t *testing.T) {
			h := newHarness(t, pc, providers.Options{})
			f := h.stand.Seed(providertest.SeedFile{Filename: "big.bin", ContentType: "application/pdf", Size: size, Downloadable: true,
				Open: func() io.Reader { return stream(size, 5) }})
			p := h.bound(t)
			// Warm the connection pool so its buffers are not counted.
			if _, err := p.Stat(t.Context(), f.ID); err != nil {
				t.Fatal(err)
			}
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			c, err := p.Content(t.Context(), f.ID)
			if err != nil {
				t.Fatal(err)
			}
			hash := sha256.New()
			n, err := io.Copy(hash, c.Body)
			c.Body.Close()
			runtime.ReadMemStats(&after)
			if err != nil || n != size || hex.EncodeToString(hash.Sum(nil)) != sum {
				t.Fatalf("read %d bytes (%v), sha matches %v", n, err, hex.EncodeToString(hash.Sum(nil)) == sum)
			}
			alloc := after.TotalAlloc - before.TotalAlloc
			t.Logf("%d MiB download allocated %d KiB in total (client + stand-in)", size>>20, alloc>>10)
			if alloc > 4<<20 {
				t.Fatalf("allocated %d bytes for a %d-byte download: the body is being buffered", alloc, size)
			}
			wantType := map[string]string{providers.ProviderOpenAI: "application/octet-stream", providers.ProviderAnthropic: "application/pdf"}[h.name]
			if c.ContentType != wantType || c.Length != size {
				t.Fatalf("content type %q length %d", c.ContentType, c.Length)
			}
		})
	}
}

func TestContentOfAnUploadIsRefused(t *testing.T) {
	for _, pc := range cases {
		t.Run(pc.name, func(t *testing.T) {
			h := newHarness(t, pc, providers.Options{})
			up, err := h.p.Upload(t.Context(), h.key, providers.File{Name: "a.txt", Body: strings.NewReader("hello")})
			if err != nil {
				t.Fatal(err)
			}
			_, err = h.bound(t).Content(t.Context(), up.ID)
			if !errors.Is(err, files.ErrProviderRejected) || errors.Is(err, files.ErrProvider) {
				t.Fatalf("content of an upload: %v, want ErrProviderRejected (400)", err)
			}
			pe := assertProviderError(t, h, err, http.StatusBadRequest, false)
			if pe.Op != "content" || pe.Metadata()["provider_status"] != http.StatusBadRequest {
				t.Fatalf("ProviderError %+v", pe)
			}
		})
	}
}

func TestDeleteReportsUnknownFiles(t *testing.T) {
	for _, pc := range cases {
		t.Run(pc.name, func(t *testing.T) {
			h := newHarness(t, pc, providers.Options{})
			f := seed(h, 1)[0]
			p := h.bound(t)
			if err := p.Delete(t.Context(), f.ID); err != nil {
				t.Fatal(err)
			}
			if len(h.stand.Files()) != 0 {
				t.Fatal("file still stored")
			}
			assertAuthorized(t, h, h.stand.Requests()[0])
			if err := p.Delete(t.Context(), f.ID); !errors.Is(err, files.ErrNotFound) {
				t.Fatalf("second delete: %v, want files.ErrNotFound", err)
			}
			if err := p.Delete(t.Context(), "../files"); !errors.Is(err, files.ErrNotFound) {
				t.Fatalf("delete of a malformed id: %v", err)
			}
			if len(h.stand.Requests()) != 2 {
				t.Fatal("a malformed id was sent")
			}
		})
	}
}

// readCalls runs every read-side call against the stand-in and returns
// each one's error.
func readCalls(t *testing.T, p files.Provider, id string) map[string]error {
	t.Helper()
	_, listErr := p.List(t.Context(), files.ProviderListQuery{})
	_, statErr := p.Stat(t.Context(), id)
	c, contentErr := p.Content(t.Context(), id)
	if contentErr == nil {
		c.Body.Close()
	}
	return map[string]error{"list": listErr, "stat": statErr, "content": contentErr}
}

func TestReadErrorsAreMapped(t *testing.T) {
	for _, pc := range cases {
		t.Run(pc.name, func(t *testing.T) {
			for _, tt := range []struct {
				status int
				want   error
			}{
				{400, files.ErrProviderRejected},
				{403, files.ErrProvider},
				{409, files.ErrProviderRejected},
				{500, files.ErrProvider},
				{503, files.ErrProvider},
				{529, files.ErrProvider},
			} {
				t.Run(fmt.Sprint(tt.status), func(t *testing.T) {
					h := newHarness(t, pc, providers.Options{})
					id := seed(h, 1)[0].ID
					h.stand.FailReads(tt.status)
					for op, err := range readCalls(t, h.bound(t), id) {
						if !errors.Is(err, tt.want) {
							t.Fatalf("%s: %v, want %v", op, err, tt.want)
						}
						pe := assertProviderError(t, h, err, tt.status, false)
						if pe.Metadata()["provider_status"] != tt.status || pe.RequestID == "" {
							t.Fatalf("%s: metadata %v", op, pe.Metadata())
						}
					}
				})
			}
		})
	}
}

func TestReadWithARefusedKey(t *testing.T) {
	for _, pc := range cases {
		t.Run(pc.name, func(t *testing.T) {
			h := newHarness(t, pc, providers.Options{})
			id := seed(h, 1)[0].ID
			h.key = seal.NewSecret(wrongKey)
			p := h.bound(t)
			calls := readCalls(t, p, id)
			calls["delete"] = p.Delete(t.Context(), id)
			for op, err := range calls {
				// The workspace's key is wrong, not the caller: 502.
				if !errors.Is(err, files.ErrProvider) || errors.Is(err, files.ErrNotFound) {
					t.Fatalf("%s: %v, want files.ErrProvider", op, err)
				}
				pe := assertProviderError(t, h, err, http.StatusUnauthorized, false)
				if pe.Metadata()["provider_status"] != http.StatusUnauthorized {
					t.Fatalf("%s: metadata %v", op, pe.Metadata())
				}
			}
			if len(h.stand.Files()) != 1 {
				t.Fatal("deleted with a wrong key")
			}
		})
	}
}

func TestReadNotFound(t *testing.T) {
	for _, pc := range cases {
		t.Run(pc.name, func(t *testing.T) {
			h := newHarness(t, pc, providers.Options{})
			h.stand.FailReads(http.StatusNotFound)
			for op, err := range readCalls(t, h.bound(t), "file-gone") {
				want := files.ErrNotFound
				if op == "list" {
					// No file named: the API is not where it was configured.
					want = files.ErrProvider
				}
				if !errors.Is(err, want) {
					t.Fatalf("%s: %v, want %v", op, err, want)
				}
			}
		})
	}
}

func TestReadRateLimited(t *testing.T) {
	for _, pc := range cases {
		t.Run(pc.name, func(t *testing.T) {
			for _, tt := range []struct {
				header string
				want   time.Duration
			}{
				{"7", 7 * time.Second},
				{time.Now().Add(90 * time.Second).UTC().Format(http.TimeFormat), 90 * time.Second},
				{"", 0},
				{"soon", 0},
			} {
				t.Run(tt.header, func(t *testing.T) {
					h := newHarness(t, pc, providers.Options{})
					h.stand.FailReads(http.StatusTooManyRequests)
					h.stand.RetryAfter(tt.header)
					p := h.bound(t)
					calls := readCalls(t, p, "file-any")
					h.stand.Reset()
					h.stand.FailDeletes(http.StatusTooManyRequests)
					h.stand.RetryAfter(tt.header)
					calls["delete"] = p.Delete(t.Context(), "file-any")
					for op, err := range calls {
						var rl *files.RateLimitedError
						if !errors.As(err, &rl) || !errors.Is(err, files.ErrProviderRateLimited) || errors.Is(err, files.ErrProvider) {
							t.Fatalf("%s: %v, want a *files.RateLimitedError only", op, err)
						}
						// An HTTP date loses up to a second to the clock.
						if d := rl.RetryAfter - tt.want; d > time.Second || d < -time.Second || (tt.want == 0) != (rl.RetryAfter == 0) || rl.Provider != h.name {
							t.Fatalf("%s: %+v, want Retry-After %v", op, rl, tt.want)
						}
						assertProviderError(t, h, err, http.StatusTooManyRequests, false)
					}
				})
			}
		})
	}
}

// TestReadTimeouts runs in a synctest bubble (see TestUploadTimeouts): each
// of the three calls gives up when its timeout runs out.
func TestReadTimeouts(t *testing.T) {
	const timeout = 200 * time.Millisecond
	for _, pc := range cases {
		t.Run(pc.name, func(t *testing.T) {
			for _, opts := range []providers.Options{
				{ResponseHeaderTimeout: timeout},
				{Timeout: timeout},
			} {
				t.Run(fmt.Sprintf("%+v", opts), func(t *testing.T) {
					synctest.Test(t, func(t *testing.T) {
						h := newBubbleHarness(t, pc, opts)
						h.stand.HangReads()
						start := time.Now()
						for op, err := range readCalls(t, h.bound(t), "file-any") {
							if !errors.Is(err, files.ErrProviderTimeout) || errors.Is(err, files.ErrProvider) {
								t.Fatalf("%s: %v, want files.ErrProviderTimeout", op, err)
							}
							assertProviderError(t, h, err, 0, true)
						}
						if took := time.Since(start); took != 3*timeout {
							t.Fatalf("three timeouts took %v, want %v", took, 3*timeout)
						}
					})
				})
			}
		})
	}
}

// TestContentStallIsATimeout: the call's timeout keeps running while the
// body is read, and a stalled body fails as a provider timeout. In a
// synctest bubble, the stall is waited out at once.
func TestContentStallIsATimeout(t *testing.T) {
	const timeout = 300 * time.Millisecond
	for _, pc := range cases {
		t.Run(pc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				h := newBubbleHarness(t, pc, providers.Options{Timeout: timeout})
				f := h.stand.Seed(providertest.SeedFile{Filename: "a.bin", Size: 1 << 20, Downloadable: true,
					Open: func() io.Reader { return bytes.NewReader(make([]byte, 1<<20)) }})
				h.stand.StallDownloadsAfter(1000)
				start := time.Now()
				c, err := h.bound(t).Content(t.Context(), f.ID)
				if err != nil {
					t.Fatal(err)
				}
				defer c.Body.Close()
				n, err := io.Copy(io.Discard, c.Body)
				if n != 1000 {
					t.Fatalf("read %d bytes before the stall, want 1000", n)
				}
				var pe *providers.ProviderError
				if !errors.As(err, &pe) || !pe.Timeout || !errors.Is(err, providers.ErrProviderTimeout) {
					t.Fatalf("stalled body: %v, want a provider timeout", err)
				}
				if took := time.Since(start); took != timeout {
					t.Fatalf("the stalled body failed after %v, want the call's timeout %v", took, timeout)
				}
			})
		})
	}
}

// TestContentCallerCancel: a caller that goes away mid-body gets its own
// context error, not a provider failure.
func TestContentCallerCancel(t *testing.T) {
	for _, pc := range cases {
		t.Run(pc.name, func(t *testing.T) {
			h := newHarness(t, pc, providers.Options{})
			f := h.stand.Seed(providertest.SeedFile{Filename: "a.bin", Size: 1 << 20, Downloadable: true,
				Open: func() io.Reader { return bytes.NewReader(make([]byte, 1<<20)) }})
			h.stand.StallDownloadsAfter(10)
			ctx, cancel := context.WithCancel(t.Context())
			c, err := h.bound(t).Content(ctx, f.ID)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Body.Close()
			if _, err := io.ReadFull(c.Body, make([]byte, 10)); err != nil {
				t.Fatal(err)
			}
			cancel()
			_, err = io.Copy(io.Discard, c.Body)
			assertCallerCanceled(t, err)
		})
	}
}

func TestReadsDoNotFollowRedirects(t *testing.T) {
	for _, pc := range cases {
		t.Run(pc.name, func(t *testing.T) {
			h := newHarness(t, pc, providers.Options{})
			target := pc.standIn(t)
			target.Key = h.stand.Key
			id := target.Seed(providertest.SeedFile{Filename: "a.txt", Downloadable: true}).ID
			h.stand.RedirectReadsTo(target.BaseURL + "/files/" + id)
			for op, err := range readCalls(t, h.bound(t), id) {
				if !errors.Is(err, files.ErrProvider) {
					t.Fatalf("%s: %v, want files.ErrProvider", op, err)
				}
				assertProviderError(t, h, err, http.StatusTemporaryRedirect, false)
			}
			if n := len(target.Requests()); n != 0 {
				t.Fatalf("the redirect target received %d requests (and the key)", n)
			}
		})
	}
}

func TestReadUnreadableAnswers(t *testing.T) {
	for _, pc := range cases {
		for _, answer := range []string{
			`{"object":"list","data":[{"id":"","object":"file"}],"has_more":false}`,
			`{"data":null,"has_more":false}`,
			`not json`,
			`{"id":"file-other","object":"file","type":"file","bytes":1,"size_bytes":1}`,
			`{"object":"list","data":[],"has_more":false,"pad":"` + strings.Repeat("x", 5<<20) + `"}`,
		} {
			t.Run(pc.name, func(t *testing.T) {
				srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					w.Header().Set("request-id", "req_odd")
					w.Header().Set("x-request-id", "req_odd")
					_, _ = io.WriteString(w, answer)
				}))
				defer srv.Close()
				h := newHarness(t, pc, providers.Options{BaseURL: srv.URL + "/v1"})
				p := h.bound(t)
				_, listErr := p.List(t.Context(), files.ProviderListQuery{})
				_, statErr := p.Stat(t.Context(), "file-1")
				// A delete answered with something that does not say the
				// file is gone is not a success.
				deleteErr := p.Delete(t.Context(), "file-1")
				for op, err := range map[string]error{"list": listErr, "stat": statErr, "delete": deleteErr} {
					if !errors.Is(err, files.ErrProvider) {
						t.Fatalf("%s of %.40q: %v, want files.ErrProvider", op, answer, err)
					}
					if pe := assertProviderError(t, h, err, http.StatusOK, false); pe.RequestID != "req_odd" {
						t.Fatalf("request id %q", pe.RequestID)
					}
				}
				if h.logs.FilterLevelExact(zapcore.WarnLevel).Len() != 3 {
					t.Fatalf("unreadable answers not logged as warnings: %v", h.logs.All())
				}
			})
		}
	}
}

// BenchmarkContent compares each provider's download with a baseline: the
// same bytes served by a bare handler and read with a plain GET. Compare
// ns/op; run with -count to interleave rounds.
func BenchmarkContent(b *testing.B) {
	const size = 16 << 20
	payload := bytes.Repeat([]byte("0123456789abcdef"), size/16)
	b.Run("baseline", func(b *testing.B) {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Length", fmt.Sprint(size))
			_, _ = io.Copy(struct{ io.Writer }{w}, bytes.NewReader(payload))
		}))
		defer srv.Close()
		b.SetBytes(size)
		b.ReportAllocs()
		for b.Loop() {
			resp, err := http.Get(srv.URL)
			if err != nil {
				b.Fatal(err)
			}
			if n, _ := io.Copy(io.Discard, resp.Body); n != size {
				b.Fatalf("read %d", n)
			}
			resp.Body.Close()
		}
	})
	for _, pc := range cases {
		b.Run(pc.name, func(b *testing.B) {
			stand := pc.standIn(b)
			p, err := pc.provider(providers.Options{BaseURL: stand.BaseURL}, nil)
			if err != nil {
				b.Fatal(err)
			}
			key := seal.NewSecret(stand.Key)
			f := stand.Seed(providertest.SeedFile{Filename: "b.bin", Size: size, Downloadable: true,
				Open: func() io.Reader { return bytes.NewReader(payload) }})
			b.SetBytes(size)
			b.ReportAllocs()
			for b.Loop() {
				c, err := p.Content(b.Context(), key, f.ID)
				if err != nil {
					b.Fatal(err)
				}
				if n, _ := io.Copy(io.Discard, c.Body); n != size {
					b.Fatalf("read %d", n)
				}
				c.Body.Close()
			}
		})
	}
}

// BenchmarkListParallel is the passthrough of GET /files?provider=...: one
// upstream list call per request, from 64 callers at once (the load of a
// busy replica). Connection reuse matters here: a caller that finds no idle
// connection opens a new one.
func BenchmarkListParallel(b *testing.B) {
	for _, pc := range cases {
		b.Run(pc.name, func(b *testing.B) {
			stand := pc.standIn(b)
			p, err := pc.provider(providers.Options{BaseURL: stand.BaseURL}, nil)
			if err != nil {
				b.Fatal(err)
			}
			key := seal.NewSecret(stand.Key)
			for range 3 {
				stand.Seed(providertest.SeedFile{Filename: "a.txt", Size: 10, Open: func() io.Reader { return strings.NewReader("0123456789") }})
			}
			b.SetParallelism(32)
			b.ReportAllocs()
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if _, err := p.List(context.Background(), key, files.ProviderListQuery{Limit: 20}); err != nil {
						b.Error(err)
						return
					}
				}
			})
		})
	}
}

// TestCallsReuseOneConnection: a caller making one call after another uses
// one connection, whatever the calls and whether the provider accepted or
// refused them. A connection is reused only when the answer was read to its
// end before being closed; one dialled (and for a real provider, one TLS
// handshake) per call is the cost this guards against.
func TestCallsReuseOneConnection(t *testing.T) {
	for _, pc := range cases {
		t.Run(pc.name, func(t *testing.T) {
			h := newHarness(t, pc, providers.Options{})
			id := seed(h, 3)[1].ID
			ctx := t.Context()
			for round := range 3 {
				up, err := h.p.Upload(ctx, h.key, providers.File{Name: "a.txt", Body: strings.NewReader("some content")})
				if err != nil {
					t.Fatal(err)
				}
				if _, err := h.p.List(ctx, h.key, files.ProviderListQuery{Limit: 2}); err != nil {
					t.Fatal(err)
				}
				if _, err := h.p.Stat(ctx, h.key, id); err != nil {
					t.Fatal(err)
				}
				c, err := h.p.Content(ctx, h.key, id)
				if err != nil {
					t.Fatal(err)
				}
				if _, err := io.Copy(io.Discard, c.Body); err != nil {
					t.Fatal(err)
				}
				c.Body.Close()
				if err := h.p.Delete(ctx, h.key, up.ID); err != nil {
					t.Fatal(err)
				}
				// Refusals: an unknown file, a wrong key, a failing provider.
				if _, err := h.p.Stat(ctx, h.key, "file-unknown"); !errors.Is(err, providers.ErrProvider) {
					t.Fatalf("stat of an unknown file: %v", err)
				}
				if _, err := h.p.List(ctx, seal.NewSecret(wrongKey), files.ProviderListQuery{}); !errors.Is(err, providers.ErrProvider) {
					t.Fatalf("list with a wrong key: %v", err)
				}
				h.stand.FailReads(http.StatusInternalServerError)
				if _, err := h.p.List(ctx, h.key, files.ProviderListQuery{}); !errors.Is(err, providers.ErrProvider) {
					t.Fatalf("list of a failing provider: %v", err)
				}
				h.stand.Reset()
				if n := h.stand.Connections(); n != 1 {
					t.Fatalf("round %d: %d connections opened, want 1", round, n)
				}
			}
		})
	}
}
