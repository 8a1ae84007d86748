package providers_test

import (
	"bytes"
	"crypto/md5"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"net/http"
	"runtime"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/aigateway/gateway/backends/providers"
	"github.com/aigateway/gateway/backends/providers/providertest"
	"github.com/aigateway/gateway/files"
	"github.com/aigateway/gateway/policy/keys/seal"
	"go.uber.org/zap"
)

// uploadHarness is the OpenAI client with its Uploads resource.
func uploadHarness(t *testing.T, opts providers.Options) (*harness, providers.Uploader) {
	t.Helper()
	h := newHarness(t, cases[0], opts)
	return h, h.p.(providers.Uploader)
}

func TestUploadsInPartsJoinInTheOrderListed(t *testing.T) {
	h, up := uploadHarness(t, providers.Options{})
	ctx := t.Context()
	sizes := []int64{3 << 20, 1 << 20, 5}
	var total int64
	for _, n := range sizes {
		total += n
	}
	u, err := up.CreateUpload(ctx, h.key, providers.UploadRequest{Bytes: total, Filename: "data/train.jsonl", MimeType: "application/jsonl", Purpose: "fine-tune"})
	if err != nil {
		t.Fatal(err)
	}
	if u.Status != "pending" || u.RequestID == "" || !u.ExpiresAt.After(time.Now()) || u.File != nil {
		t.Fatalf("created %+v", u)
	}
	ids := make([]string, len(sizes))
	for i, n := range sizes {
		p, err := up.AddUploadPart(ctx, h.key, u.ID, stream(n, uint64(i)))
		if err != nil {
			t.Fatal(err)
		}
		if p.UploadID != u.ID || p.ID == "" {
			t.Fatalf("part %+v", p)
		}
		ids[i] = p.ID
	}
	// Listed last part first: the file is the parts in that order.
	order := []int{2, 0, 1}
	sha, sum := sha256.New(), md5.New()
	listed := make([]string, len(order))
	for i, j := range order {
		listed[i] = ids[j]
		_, _ = io.Copy(io.MultiWriter(sha, sum), stream(sizes[j], uint64(j)))
	}
	done, err := up.CompleteUpload(ctx, h.key, u.ID, listed, hex.EncodeToString(sum.Sum(nil)))
	if err != nil {
		t.Fatal(err)
	}
	if done.Status != "completed" || done.File == nil || done.File.Size != total || done.File.Filename != "data/train.jsonl" || done.File.Purpose != "fine-tune" || !done.File.Downloadable {
		t.Fatalf("completed %+v file %+v", done, done.File)
	}
	f, ok := h.stand.File(done.File.ID)
	if !ok || f.SHA256 != hex.EncodeToString(sha.Sum(nil)) || f.Size != total {
		t.Fatalf("stand-in holds %+v, want the parts joined in the order listed", f)
	}
	// The file is then one of the provider's files like any other.
	page, err := h.p.List(ctx, h.key, files.ProviderListQuery{})
	if err != nil || len(page.Files) != 1 || page.Files[0].ID != done.File.ID {
		t.Fatalf("list = %+v, %v", page, err)
	}
	if su, _ := h.stand.Upload(u.ID); su.Status != "completed" || len(su.Parts) != 0 {
		t.Fatalf("stand-in upload %+v", su)
	}
	for _, r := range h.stand.Requests() {
		if r.Method != http.MethodPost || r.Header.Get("Authorization") != "Bearer "+h.stand.Key {
			continue
		}
		if strings.HasSuffix(r.Path, "/parts") && (r.ContentLength != -1 || !r.Complete || r.FileParts != 1) {
			t.Errorf("part request %+v: want one data part, streamed with chunked encoding", r)
		}
	}
}

func TestUploadsCancelDropsTheParts(t *testing.T) {
	h, up := uploadHarness(t, providers.Options{})
	ctx := t.Context()
	u, err := up.CreateUpload(ctx, h.key, providers.UploadRequest{Bytes: 10, Filename: "a.txt", MimeType: "text/plain", Purpose: "user_data"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := up.AddUploadPart(ctx, h.key, u.ID, strings.NewReader("hello")); err != nil {
		t.Fatal(err)
	}
	c, err := up.CancelUpload(ctx, h.key, u.ID)
	if err != nil || c.Status != "cancelled" || c.ID != u.ID {
		t.Fatalf("cancel = %+v, %v", c, err)
	}
	if su, _ := h.stand.Upload(u.ID); su.Status != "cancelled" || len(su.Parts) != 0 || su.PartBytes != 0 {
		t.Fatalf("stand-in keeps %+v", su)
	}
	// A cancelled upload takes nothing more: the provider's refusal.
	_, err = up.AddUploadPart(ctx, h.key, u.ID, strings.NewReader("world"))
	assertProviderError(t, h, err, http.StatusBadRequest, false)
	_, err = up.CancelUpload(ctx, h.key, u.ID)
	assertProviderError(t, h, err, http.StatusBadRequest, false)
}

func TestUploadsProviderErrors(t *testing.T) {
	h, up := uploadHarness(t, providers.Options{})
	ctx := t.Context()
	u, err := up.CreateUpload(ctx, h.key, providers.UploadRequest{Bytes: 5, Filename: "a.txt", MimeType: "text/plain", Purpose: "user_data"})
	if err != nil {
		t.Fatal(err)
	}
	p, err := up.AddUploadPart(ctx, h.key, u.ID, strings.NewReader("hell"))
	if err != nil {
		t.Fatal(err)
	}
	// The parts do not add up to the bytes declared: OpenAI's 400, with
	// its request id and type, and nothing of its message.
	_, err = up.CompleteUpload(ctx, h.key, u.ID, []string{p.ID}, "")
	pe := assertProviderError(t, h, err, http.StatusBadRequest, false)
	if pe.RequestID == "" || pe.Type != "invalid_request_error" || pe.Op != "complete upload" {
		t.Fatalf("refusal %+v", pe)
	}
	calls := map[string]func() error{
		"create": func() error {
			_, err := up.CreateUpload(ctx, h.key, providers.UploadRequest{Bytes: 1, Filename: "b.txt", MimeType: "text/plain", Purpose: "user_data"})
			return err
		},
		"part": func() error { _, err := up.AddUploadPart(ctx, h.key, u.ID, strings.NewReader("o")); return err },
		"complete": func() error {
			_, err := up.CompleteUpload(ctx, h.key, u.ID, []string{p.ID}, "")
			return err
		},
		"cancel": func() error { _, err := up.CancelUpload(ctx, h.key, u.ID); return err },
	}
	for _, status := range []int{400, 404, 429, 500, 503} {
		h.stand.FailUploadRoutes(status)
		h.stand.RetryAfter("7")
		for name, call := range calls {
			pe := assertProviderError(t, h, call(), status, false)
			if status == 429 && pe.RetryAfter != 7*time.Second {
				t.Errorf("%s: 429 Retry-After = %v", name, pe.RetryAfter)
			}
		}
	}
	h.stand.Reset()
	_, err = up.CreateUpload(ctx, seal.NewSecret(wrongKey), providers.UploadRequest{Bytes: 1, Filename: "b.txt", MimeType: "text/plain", Purpose: "user_data"})
	assertProviderError(t, h, err, http.StatusUnauthorized, false)
	if su, _ := h.stand.Upload(u.ID); su.Status != "pending" || su.PartBytes != 4 {
		t.Fatalf("failed calls changed the upload: %+v", su)
	}
}

func TestUploadsRefuseBeforeSending(t *testing.T) {
	ctx := t.Context()
	h, up := uploadHarness(t, providers.Options{})
	for _, id := range []string{"", "../files", "upload_a/b", "upload?x=1"} {
		if _, err := up.AddUploadPart(ctx, h.key, id, strings.NewReader("x")); !errors.Is(err, providers.ErrInvalidFileID) {
			t.Errorf("part of %q: %v", id, err)
		}
		if _, err := up.CompleteUpload(ctx, h.key, id, []string{"part_1"}, ""); !errors.Is(err, providers.ErrInvalidFileID) {
			t.Errorf("complete of %q: %v", id, err)
		}
		if _, err := up.CancelUpload(ctx, h.key, id); !errors.Is(err, providers.ErrInvalidFileID) {
			t.Errorf("cancel of %q: %v", id, err)
		}
	}
	if _, err := up.CreateUpload(ctx, seal.NewSecret(""), providers.UploadRequest{Bytes: 1}); !errors.Is(err, providers.ErrInvalidKey) {
		t.Errorf("empty key: %v", err)
	}
	// Anthropic has no Uploads resource.
	a := newHarness(t, cases[1], providers.Options{})
	aup := a.p.(providers.Uploader)
	if _, err := aup.CreateUpload(ctx, a.key, providers.UploadRequest{Bytes: 1, Filename: "a.txt", MimeType: "text/plain"}); !errors.Is(err, providers.ErrNoUploads) {
		t.Errorf("anthropic create: %v", err)
	}
	if _, err := aup.AddUploadPart(ctx, a.key, "upload_1", strings.NewReader("x")); !errors.Is(err, providers.ErrNoUploads) {
		t.Errorf("anthropic part: %v", err)
	}
	if n := len(h.stand.Requests()) + len(a.stand.Requests()); n != 0 {
		t.Fatalf("%d requests sent", n)
	}
}

func TestUploadPartBodyErrorAbortsRequest(t *testing.T) {
	h, up := uploadHarness(t, providers.Options{})
	u, err := up.CreateUpload(t.Context(), h.key, providers.UploadRequest{Bytes: 8 << 20, Filename: "a.bin", MimeType: "application/octet-stream", Purpose: "batch"})
	if err != nil {
		t.Fatal(err)
	}
	limitErr := &files.PartTooLargeError{Limit: 1 << 20}
	_, err = up.AddUploadPart(t.Context(), h.key, u.ID, &failingReader{stream(3<<20, 1), limitErr})
	var tl *files.PartTooLargeError
	if !errors.As(err, &tl) || tl != limitErr {
		t.Fatalf("err = %v, want the reader's error", err)
	}
	if errors.Is(err, providers.ErrProvider) || errors.Is(err, providers.ErrProviderTimeout) {
		t.Fatalf("a reader failure is reported as a provider failure: %v", err)
	}
	if req := h.stand.AwaitRequests(t, 2)[1]; req.Complete {
		t.Fatal("the stand-in saw a complete part")
	}
	if su, _ := h.stand.Upload(u.ID); len(su.Parts) != 0 {
		t.Fatalf("the stand-in kept a part of an aborted request: %+v", su)
	}
}

func TestUploadPartMemoryIsBounded(t *testing.T) {
	if testing.Short() {
		t.Skip("moves 16 MiB")
	}
	h, up := uploadHarness(t, providers.Options{})
	ctx := t.Context()
	u, err := up.CreateUpload(ctx, h.key, providers.UploadRequest{Bytes: memoryTestSize + 1, Filename: "a.bin", MimeType: "application/octet-stream", Purpose: "batch"})
	if err != nil {
		t.Fatal(err)
	}
	// Warm the connection pool so its buffers are not counted.
	if _, err := up.AddUploadPart(ctx, h.key, u.ID, strings.NewReader("x")); err != nil {
		t.Fatal(err)
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	if _, err := up.AddUploadPart(ctx, h.key, u.ID, stream(memoryTestSize, 3)); err != nil {
		t.Fatal(err)
	}
	runtime.ReadMemStats(&after)
	alloc := after.TotalAlloc - before.TotalAlloc
	t.Logf("%d MiB part allocated %d KiB in total (client + stand-in)", memoryTestSize>>20, alloc>>10)
	if alloc > 4<<20 {
		t.Fatalf("allocated %d bytes for a %d-byte part: the part is being buffered", alloc, memoryTestSize)
	}
	if su, _ := h.stand.Upload(u.ID); su.PartBytes != memoryTestSize+1 {
		t.Fatalf("stand-in holds %d bytes", su.PartBytes)
	}
}

func TestUploadsTimeOut(t *testing.T) {
	const timeout = 200 * time.Millisecond
	synctest.Test(t, func(t *testing.T) {
		h := newBubbleHarness(t, cases[0], providers.Options{Timeout: timeout})
		up := h.p.(providers.Uploader)
		u, err := up.CreateUpload(t.Context(), h.key, providers.UploadRequest{Bytes: 5, Filename: "a.txt", MimeType: "text/plain", Purpose: "user_data"})
		if err != nil {
			t.Fatal(err)
		}
		h.stand.Hang()
		start := time.Now()
		_, err = up.AddUploadPart(t.Context(), h.key, u.ID, strings.NewReader("hello"))
		assertProviderError(t, h, err, 0, true)
		_, err = up.CancelUpload(t.Context(), h.key, u.ID)
		assertProviderError(t, h, err, 0, true)
		if took := time.Since(start); took != 2*timeout {
			t.Fatalf("two calls timed out after %v, want %v", took, 2*timeout)
		}
	})
}

// BenchmarkUploadPart: a 16 MiB part sent to the OpenAI stand-in beside the
// baseline measured in the same run, the same bytes sent as a whole file
// through the Files API (Client.Upload), which streams the same way. Run
// with -count to interleave rounds; compare MB/s and allocs/op.
func BenchmarkUploadPart(b *testing.B) {
	const size = 16 << 20
	payload := bytes.Repeat([]byte("0123456789abcdef"), size/16)
	stand := providertest.NewOpenAI(b)
	p, err := providers.NewOpenAI(providers.Options{BaseURL: stand.BaseURL}, zap.NewNop())
	if err != nil {
		b.Fatal(err)
	}
	key := seal.NewSecret(stand.Key)
	ctx := b.Context()
	b.Run("file", func(b *testing.B) {
		b.SetBytes(size)
		b.ReportAllocs()
		for b.Loop() {
			up, err := p.Upload(ctx, key, providers.File{Name: "b.bin", Body: bytes.NewReader(payload)})
			if err != nil {
				b.Fatal(err)
			}
			// The stand-in keeps files on disk: do not let them pile up.
			b.StopTimer()
			if err := p.Delete(ctx, key, up.ID); err != nil {
				b.Fatal(err)
			}
			b.StartTimer()
		}
	})
	b.Run("part", func(b *testing.B) {
		b.SetBytes(size)
		b.ReportAllocs()
		upload := func() string {
			u, err := p.CreateUpload(ctx, key, providers.UploadRequest{Bytes: 8 << 30, Filename: "b.bin", MimeType: "application/octet-stream", Purpose: "batch"})
			if err != nil {
				b.Fatal(err)
			}
			return u.ID
		}
		id, parts := upload(), 0
		for b.Loop() {
			if _, err := p.AddUploadPart(ctx, key, id, bytes.NewReader(payload)); err != nil {
				b.Fatal(err)
			}
			// The stand-in keeps parts on disk until the upload ends.
			if parts++; parts == 4 {
				b.StopTimer()
				if _, err := p.CancelUpload(ctx, key, id); err != nil {
					b.Fatal(err)
				}
				id, parts = upload(), 0
				b.StartTimer()
			}
		}
	})
}
