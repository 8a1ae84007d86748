package providers_test

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/aigateway/gateway/backends/providers"
	"github.com/aigateway/gateway/backends/providers/providertest"
	"github.com/aigateway/gateway/files"
	"github.com/aigateway/gateway/policy/keys/seal"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"
)

// harness is one provider wired to its stand-in, with its logs observed at
// debug level so every test can check that the key never reached them.
type harness struct {
	name  string
	stand *providertest.Server
	p     providers.Provider
	key   seal.Secret
	logs  *observer.ObservedLogs
}

type providerCase struct {
	name     string
	standIn  func(testing.TB) *providertest.Server
	inMemory func(testing.TB) *providertest.Server // the stand-in for a synctest bubble
	provider func(providers.Options, *zap.Logger) (providers.Provider, error)
}

var cases = []providerCase{
	{providers.ProviderOpenAI, providertest.NewOpenAI, providertest.NewOpenAIInMemory,
		func(o providers.Options, l *zap.Logger) (providers.Provider, error) { return providers.NewOpenAI(o, l) }},
	{providers.ProviderAnthropic, providertest.NewAnthropic, providertest.NewAnthropicInMemory,
		func(o providers.Options, l *zap.Logger) (providers.Provider, error) {
			return providers.NewAnthropic(o, l)
		}},
}

func newHarness(t *testing.T, pc providerCase, opts providers.Options) *harness {
	t.Helper()
	return harnessOn(t, pc, pc.standIn(t), opts)
}

// newBubbleHarness is newHarness for a test inside a synctest bubble: the
// stand-in is in memory and the provider dials it there, so the call's
// timeouts run on the bubble's clock, and waiting one out takes no time.
func newBubbleHarness(t *testing.T, pc providerCase, opts providers.Options) *harness {
	t.Helper()
	h := harnessOn(t, pc, pc.inMemory(t), opts)
	providers.DialThrough(h.p, h.stand.Dial)
	return h
}

// harnessOn wires pc's provider to stand; opts.BaseURL, when empty, is the
// stand-in's.
func harnessOn(t *testing.T, pc providerCase, stand *providertest.Server, opts providers.Options) *harness {
	t.Helper()
	if opts.BaseURL == "" {
		opts.BaseURL = stand.BaseURL
	}
	core, logs := observer.New(zapcore.DebugLevel)
	p, err := pc.provider(opts, zap.New(core))
	if err != nil {
		t.Fatal(err)
	}
	h := &harness{name: pc.name, stand: stand, p: p, key: seal.NewSecret(stand.Key), logs: logs}
	t.Cleanup(func() { h.assertKeyNotLogged(t) })
	return h
}

// assertKeyNotLogged fails when any log entry, message or field, holds the
// key (or the wrong key the tests send).
func (h *harness) assertKeyNotLogged(t *testing.T) {
	t.Helper()
	for _, e := range h.logs.All() {
		line := e.Message + fmt.Sprint(e.ContextMap())
		for _, k := range []string{h.stand.Key, wrongKey} {
			if strings.Contains(line, k) {
				t.Errorf("key in log entry: %s", line)
			}
		}
	}
}

const wrongKey = "sk-wrong-key-5b7d9f1e3c"

// assertProviderError checks an error is a *ProviderError with status and
// that neither the key nor the provider's message leaks through it.
func assertProviderError(t *testing.T, h *harness, err error, status int, timeout bool) *providers.ProviderError {
	t.Helper()
	var pe *providers.ProviderError
	if !errors.As(err, &pe) {
		t.Fatalf("err = %v (%T), want *ProviderError", err, err)
	}
	if pe.Status != status || pe.Timeout != timeout || pe.Provider != h.name {
		t.Fatalf("ProviderError = %+v, want status %d timeout %v provider %s", pe, status, timeout, h.name)
	}
	if errors.Is(err, providers.ErrProvider) == timeout || errors.Is(err, providers.ErrProviderTimeout) != timeout {
		t.Fatalf("err %v: Is(ErrProvider)=%v Is(ErrProviderTimeout)=%v, timeout=%v", err,
			errors.Is(err, providers.ErrProvider), errors.Is(err, providers.ErrProviderTimeout), timeout)
	}
	for _, leak := range []string{h.stand.Key, wrongKey, "stand-in failure", "Incorrect API key", "invalid x-api-key"} {
		if strings.Contains(err.Error(), leak) || strings.Contains(fmt.Sprint(pe.Metadata()), leak) {
			t.Fatalf("error or metadata leaks %q: %v %v", leak, err, pe.Metadata())
		}
	}
	if pe.Metadata()["provider"] != h.name {
		t.Fatalf("metadata %v lacks the provider", pe.Metadata())
	}
	return pe
}

// stream returns a deterministic pseudo-random reader of n bytes.
func stream(n int64, seed uint64) io.Reader {
	var s [32]byte
	s[0] = byte(seed)
	return io.LimitReader(rand.NewChaCha8(s), n)
}

// body returns stream(n, seed) and the hex SHA-256 it will produce.
func body(n int64, seed uint64) (io.Reader, string) {
	h := sha256.New()
	_, _ = io.Copy(h, stream(n, seed))
	return stream(n, seed), hex.EncodeToString(h.Sum(nil))
}

func TestUploadStreamsExactBytesWithProtocolHeaders(t *testing.T) {
	for _, pc := range cases {
		t.Run(pc.name, func(t *testing.T) {
			h := newHarness(t, pc, providers.Options{})
			const size = 6<<20 + 12345
			r, sum := body(size, 1)
			before := time.Now().Add(-2 * time.Second)
			up, err := h.p.Upload(t.Context(), h.key, providers.File{Name: "reports/Q3 résumé.pdf", ContentType: "application/pdf", Body: r})
			if err != nil {
				t.Fatal(err)
			}
			files := h.stand.Files()
			if len(files) != 1 {
				t.Fatalf("stand-in holds %d files", len(files))
			}
			f := files[0]
			if up.ID != f.ID || up.Bytes != size || up.RequestID == "" || up.RequestID != f.RequestID {
				t.Fatalf("Uploaded %+v, stand-in file %+v", up, f)
			}
			if up.CreatedAt.Before(before) || up.CreatedAt.After(time.Now().Add(2*time.Second)) || up.CreatedAt.Location() != time.UTC {
				t.Fatalf("CreatedAt %v", up.CreatedAt)
			}
			if f.SHA256 != sum || f.Size != size {
				t.Fatalf("stand-in received %d bytes sha %s, sent %d sha %s", f.Size, f.SHA256, size, sum)
			}
			if f.Filename != "reports/Q3 résumé.pdf" || f.ContentType != "application/pdf" {
				t.Fatalf("file part: filename %q content type %q", f.Filename, f.ContentType)
			}

			req := h.stand.Requests()[0]
			if req.Method != http.MethodPost || req.Path != "/v1/files" {
				t.Fatalf("%s %s", req.Method, req.Path)
			}
			// Streamed: no declared length.
			if req.ContentLength != -1 || len(req.TransferEncoding) != 1 || req.TransferEncoding[0] != "chunked" {
				t.Fatalf("Content-Length %d, Transfer-Encoding %v: want chunked", req.ContentLength, req.TransferEncoding)
			}
			if !req.Complete || req.FileParts != 1 {
				t.Fatalf("complete %v, file parts %d", req.Complete, req.FileParts)
			}
			switch h.name {
			case providers.ProviderOpenAI:
				if got := req.Header.Get("Authorization"); got != "Bearer "+h.stand.Key {
					t.Fatalf("Authorization %q", got)
				}
				if req.Fields["purpose"] != "user_data" || f.Purpose != "user_data" || len(req.Fields) != 1 {
					t.Fatalf("fields %v", req.Fields)
				}
				if req.Header.Get("x-api-key") != "" {
					t.Fatal("OpenAI request carries x-api-key")
				}
			case providers.ProviderAnthropic:
				if req.Header.Get("x-api-key") != h.stand.Key ||
					req.Header.Get("anthropic-version") != "2023-06-01" ||
					req.Header.Get("anthropic-beta") != "files-api-2025-04-14" {
					t.Fatalf("headers %v", req.Header)
				}
				if req.Header.Get("Authorization") != "" {
					t.Fatal("Anthropic request carries Authorization")
				}
				if len(req.Fields) != 0 {
					t.Fatalf("fields %v, want the file part only", req.Fields)
				}
			}
		})
	}
}

// memoryTestSize is the size of the file the memory tests move: four
// times their bound on what the whole process may allocate, so a body
// buffered anywhere, client or stand-in, fails them.
const memoryTestSize = 16 << 20

// TestUploadMemoryIsBounded streams a file of memoryTestSize and checks the
// bytes allocated by the whole process (client and stand-in) stay far
// below its size.
func TestUploadMemoryIsBounded(t *testing.T) {
	if testing.Short() {
		t.Skip("moves 16 MiB")
	}
	const size = memoryTestSize
	_, sum := body(size, 2)
	for _, pc := range cases {
		t.Run(pc.name, func(t *testing.T) {
			h := newHarness(t, pc, providers.Options{})
			// Warm the connection pool so its buffers are not counted.
			if _, err := h.p.Upload(t.Context(), h.key, providers.File{Name: "warm.txt", Body: strings.NewReader("x")}); err != nil {
				t.Fatal(err)
			}
			r := stream(size, 2)
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			if _, err := h.p.Upload(t.Context(), h.key, providers.File{Name: "big.bin", Body: r}); err != nil {
				t.Fatal(err)
			}
			runtime.ReadMemStats(&after)
			alloc := after.TotalAlloc - before.TotalAlloc
			t.Logf("%d MiB upload allocated %d KiB in total (client + stand-in)", size>>20, alloc>>10)
			if alloc > 4<<20 {
				t.Fatalf("allocated %d bytes for a %d-byte upload: the body is being buffered", alloc, size)
			}
			if got := h.stand.Files()[1]; got.SHA256 != sum {
				t.Fatal("content differs")
			}
		})
	}
}

func TestUploadProviderErrors(t *testing.T) {
	for _, pc := range cases {
		t.Run(pc.name, func(t *testing.T) {
			for _, status := range []int{400, 403, 413, 429, 500, 503, 529} {
				t.Run(fmt.Sprint(status), func(t *testing.T) {
					h := newHarness(t, pc, providers.Options{})
					h.stand.FailUploads(status)
					r := stream(100<<10, 3)
					_, err := h.p.Upload(t.Context(), h.key, providers.File{Name: "a.txt", ContentType: "text/plain", Body: r})
					pe := assertProviderError(t, h, err, status, false)
					req := h.stand.Requests()[0]
					if pe.RequestID == "" || pe.RequestID != req.RequestID {
						t.Fatalf("request id %q, stand-in sent %q", pe.RequestID, req.RequestID)
					}
					if pe.Metadata()["provider_request_id"] != req.RequestID || pe.Metadata()["provider_status"] != status {
						t.Fatalf("metadata %v", pe.Metadata())
					}
					if pe.Type == "" {
						t.Fatal("provider error type not kept")
					}
					if len(h.stand.Files()) != 0 {
						t.Fatal("file stored")
					}
					// The provider's message is for debug logs only.
					if h.logs.FilterMessage("provider refused").FilterField(zap.String("message", "stand-in failure requested by the test")).Len() != 1 {
						t.Fatalf("provider message not logged at debug: %v", h.logs.All())
					}
				})
			}
		})
	}
}

func TestUploadWrongKey(t *testing.T) {
	for _, pc := range cases {
		t.Run(pc.name, func(t *testing.T) {
			h := newHarness(t, pc, providers.Options{})
			_, err := h.p.Upload(t.Context(), seal.NewSecret(wrongKey), providers.File{Name: "a.txt", Body: strings.NewReader("hello")})
			pe := assertProviderError(t, h, err, http.StatusUnauthorized, false)
			if pe.RequestID == "" {
				t.Fatal("no request id")
			}
			// The stand-ins echo the wrong key in their message, so this
			// proves the debug log blanks it.
			if h.logs.FilterMessage("provider refused").Len() != 1 {
				t.Fatal("refusal not logged")
			}
		})
	}
}

// TestUploadTimeouts runs in a synctest bubble: the stand-in never
// answers, and the call gives up when its timeout runs out on the bubble's
// clock, which moves only once everything waits.
func TestUploadTimeouts(t *testing.T) {
	const timeout = 200 * time.Millisecond
	for _, pc := range cases {
		t.Run(pc.name, func(t *testing.T) {
			tests := []struct {
				name string
				opts providers.Options
				ctx  func(t *testing.T) context.Context
			}{
				{"response header timeout", providers.Options{ResponseHeaderTimeout: timeout}, nil},
				{"call timeout", providers.Options{Timeout: timeout}, nil},
				{"caller deadline", providers.Options{}, func(t *testing.T) context.Context {
					ctx, cancel := context.WithTimeout(t.Context(), timeout)
					t.Cleanup(cancel)
					return ctx
				}},
			}
			for _, tt := range tests {
				t.Run(tt.name, func(t *testing.T) {
					synctest.Test(t, func(t *testing.T) {
						h := newBubbleHarness(t, pc, tt.opts)
						h.stand.Hang()
						ctx := t.Context()
						if tt.ctx != nil {
							ctx = tt.ctx(t)
						}
						start := time.Now()
						_, err := h.p.Upload(ctx, h.key, providers.File{Name: "a.txt", Body: strings.NewReader("hello")})
						assertProviderError(t, h, err, 0, true)
						if took := time.Since(start); took != timeout {
							t.Fatalf("timed out after %v, want %v", took, timeout)
						}
						if len(h.stand.Files()) != 0 {
							t.Fatal("file stored")
						}
					})
				})
			}
		})
	}
}

// cancelAtEOF cancels the caller's context once the whole body was read,
// i.e. while the request waits for the provider.
type cancelAtEOF struct {
	r      io.Reader
	cancel context.CancelFunc
}

func (c cancelAtEOF) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	if err == io.EOF {
		c.cancel()
	}
	return n, err
}

// assertCallerCanceled checks err is the caller's own context.Canceled, not
// a provider failure.
func assertCallerCanceled(t *testing.T, err error) {
	t.Helper()
	if !errors.Is(err, context.Canceled) || errors.Is(err, providers.ErrProvider) || errors.Is(err, providers.ErrProviderTimeout) {
		t.Fatalf("err = %v, want context.Canceled only", err)
	}
}

// A caller that goes away once the whole file is sent waits for the
// provider's answer, which names the file it may now hold, for at most the
// settle time; a provider that never answers leaves the caller its own
// context error, not a provider failure. The bubble's clock runs the wait.
func TestUploadCallerCancelIsNotAProviderError(t *testing.T) {
	for _, pc := range cases {
		t.Run(pc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				h := newBubbleHarness(t, pc, providers.Options{})
				h.stand.Hang()
				ctx, cancel := context.WithCancel(t.Context())
				defer cancel()
				start := time.Now()
				_, err := h.p.Upload(ctx, h.key, providers.File{Name: "a.txt", Body: cancelAtEOF{strings.NewReader("hello"), cancel}})
				assertCallerCanceled(t, err)
				if took := time.Since(start); took != providers.SettleTimeout {
					t.Fatalf("gave up after %v, want the settle time %v", took, providers.SettleTimeout)
				}
			})
		})
	}
}

// The file was all sent when the caller went away: the provider's answer
// still comes back, with the id of the file it keeps, so the caller can
// delete it rather than leave it behind unrecorded.
func TestUploadCallerGoneAfterTheFileLearnsItsID(t *testing.T) {
	for _, pc := range cases {
		t.Run(pc.name, func(t *testing.T) {
			h := newHarness(t, pc, providers.Options{})
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			up, err := h.p.Upload(ctx, h.key, providers.File{Name: "a.txt", Body: cancelAtEOF{strings.NewReader("hello"), cancel}})
			if err != nil {
				t.Fatalf("Upload: %v, want the stored file's id", err)
			}
			if f, ok := h.stand.File(up.ID); !ok || f.Size != 5 {
				t.Fatalf("the provider holds %+v (%v), want the uploaded file %s", f, ok, up.ID)
			}
		})
	}
}

// cancelAfterFirstRead cancels the caller's context after its first read,
// and yields zeros until the upload returns.
type cancelAfterFirstRead struct {
	endlessReader
	cancel context.CancelFunc
}

func (c *cancelAfterFirstRead) Read(p []byte) (int, error) {
	if c.reads.Load() == 1 {
		c.cancel()
	}
	return c.endlessReader.Read(p)
}

// A caller that goes away while the file is still being sent cuts the
// request short: the provider keeps nothing, and the file is not read on.
func TestUploadCallerGoneMidFileStopsIt(t *testing.T) {
	for _, pc := range cases {
		t.Run(pc.name, func(t *testing.T) {
			h := newHarness(t, pc, providers.Options{})
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			r := &cancelAfterFirstRead{endlessReader: endlessReader{t: t}, cancel: cancel}
			_, err := h.p.Upload(ctx, h.key, providers.File{Name: "a.bin", Body: r})
			r.returned.Store(true)
			assertCallerCanceled(t, err)
			if n := len(h.stand.Files()); n != 0 {
				t.Fatalf("the provider holds %d files, want none", n)
			}
		})
	}
}

func TestUploadDoesNotFollowRedirects(t *testing.T) {
	for _, pc := range cases {
		t.Run(pc.name, func(t *testing.T) {
			h := newHarness(t, pc, providers.Options{})
			target := pc.standIn(t)
			h.stand.RedirectTo(target.BaseURL + "/files")
			_, err := h.p.Upload(t.Context(), h.key, providers.File{Name: "a.txt", Body: strings.NewReader("hello")})
			assertProviderError(t, h, err, http.StatusTemporaryRedirect, false)
			if n := len(target.Requests()); n != 0 {
				t.Fatalf("the redirect target received %d requests (and the key)", n)
			}
			if len(h.stand.Files()) != 0 {
				t.Fatal("file stored")
			}
		})
	}
}

func TestUploadConnectionRefused(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	base := "http://" + l.Addr().String()
	l.Close()
	for _, pc := range cases {
		t.Run(pc.name, func(t *testing.T) {
			h := newHarness(t, pc, providers.Options{BaseURL: base})
			_, err := h.p.Upload(t.Context(), h.key, providers.File{Name: "a.txt", Body: strings.NewReader("hello")})
			pe := assertProviderError(t, h, err, 0, false)
			if pe.Err == nil || pe.RequestID != "" {
				t.Fatalf("ProviderError %+v", pe)
			}
		})
	}
}

// failingReader returns n bytes, then err.
type failingReader struct {
	r   io.Reader
	err error
}

func (f *failingReader) Read(p []byte) (int, error) {
	n, err := f.r.Read(p)
	if err == io.EOF {
		return n, f.err
	}
	return n, err
}

func TestUploadBodyErrorAbortsRequest(t *testing.T) {
	for _, pc := range cases {
		t.Run(pc.name, func(t *testing.T) {
			h := newHarness(t, pc, providers.Options{})
			const sent = 3 << 20
			r := stream(sent, 4)
			limitErr := &http.MaxBytesError{Limit: sent}
			_, err := h.p.Upload(t.Context(), h.key, providers.File{Name: "big.bin", Body: &failingReader{r, limitErr}})
			var mbe *http.MaxBytesError
			if !errors.As(err, &mbe) || mbe != limitErr {
				t.Fatalf("err = %v, want the reader's *http.MaxBytesError", err)
			}
			if errors.Is(err, providers.ErrProvider) || errors.Is(err, providers.ErrProviderTimeout) {
				t.Fatalf("a reader failure is reported as a provider failure: %v", err)
			}
			req := h.stand.AwaitRequests(t, 1)[0]
			if req.Complete {
				t.Fatal("the stand-in saw a complete upload")
			}
			if req.BodyBytes > sent {
				t.Fatalf("stand-in read %d bytes, more than were sent", req.BodyBytes)
			}
			if len(h.stand.Files()) != 0 {
				t.Fatal("a file was stored from an aborted upload")
			}
		})
	}
}

// endlessReader yields zeros forever and fails the test if read after the
// upload returned.
type endlessReader struct {
	t        *testing.T
	returned atomic.Bool
	reads    atomic.Int64
}

func (e *endlessReader) Read(p []byte) (int, error) {
	if e.returned.Load() {
		e.t.Error("body read after Upload returned")
	}
	e.reads.Add(1)
	clear(p)
	return len(p), nil
}

// TestUploadEarlyAnswerStopsReading: a provider that refuses before reading
// the body ends the upload, and the caller's reader is never touched again.
func TestUploadEarlyAnswerStopsReading(t *testing.T) {
	for _, pc := range cases {
		t.Run(pc.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				// Refuse once the file has begun to arrive (its first zero
				// byte; the form's headers before it have none), as a
				// front end checking the key does: the answer is complete
				// and closes the connection while the body is still being
				// sent.
				if _, err := bufio.NewReader(r.Body).ReadBytes(0); err != nil {
					t.Errorf("no file content: %v", err)
					return
				}
				rc := http.NewResponseController(w)
				if err := rc.EnableFullDuplex(); err != nil {
					t.Error(err)
					return
				}
				const answer = `{"type":"error","error":{"type":"authentication_error","message":"no"}}`
				w.Header().Set("request-id", "req_early")
				w.Header().Set("x-request-id", "req_early")
				w.Header().Set("Content-Length", strconv.Itoa(len(answer)))
				w.Header().Set("Connection", "close")
				w.WriteHeader(http.StatusUnauthorized)
				_, _ = io.WriteString(w, answer)
				_ = rc.Flush()
				// Read on until the client drops the body: a handler
				// leaving it unread would have the server wait half a
				// second before closing (net/http's rstAvoidanceDelay).
				_, _ = io.Copy(io.Discard, r.Body)
			}))
			defer srv.Close()
			base := srv.URL
			if pc.name == providers.ProviderOpenAI {
				base += "/v1"
			}
			h := newHarness(t, pc, providers.Options{BaseURL: base, Timeout: 10 * time.Second})
			er := &endlessReader{t: t}
			_, err := h.p.Upload(t.Context(), h.key, providers.File{Name: "a.bin", Body: er})
			er.returned.Store(true)
			if err == nil {
				t.Fatal("upload of an endless body succeeded")
			}
			var pe *providers.ProviderError
			if !errors.As(err, &pe) || pe.Timeout {
				t.Fatalf("err = %v, want a provider error, not a timeout", err)
			}
			if er.reads.Load() == 0 {
				t.Fatal("body never read")
			}
		})
	}
}

func TestDelete(t *testing.T) {
	for _, pc := range cases {
		t.Run(pc.name, func(t *testing.T) {
			h := newHarness(t, pc, providers.Options{})
			up, err := h.p.Upload(t.Context(), h.key, providers.File{Name: "a.txt", Body: strings.NewReader("hello")})
			if err != nil {
				t.Fatal(err)
			}
			if err := h.p.Delete(t.Context(), h.key, up.ID); err != nil {
				t.Fatal(err)
			}
			if len(h.stand.Files()) != 0 {
				t.Fatal("file still stored after Delete")
			}
			req := h.stand.Requests()[1]
			if req.Method != http.MethodDelete || req.Path != "/v1/files/"+up.ID || req.Status != http.StatusOK {
				t.Fatalf("%s %s -> %d", req.Method, req.Path, req.Status)
			}
			if h.name == providers.ProviderAnthropic && (req.Header.Get("anthropic-beta") != "files-api-2025-04-14" || req.Header.Get("x-api-key") != h.stand.Key) {
				t.Fatalf("delete headers %v", req.Header)
			}
			if h.name == providers.ProviderOpenAI && req.Header.Get("Authorization") != "Bearer "+h.stand.Key {
				t.Fatalf("delete headers %v", req.Header)
			}

			// Already gone: the provider's 404, for the caller to judge
			// (the keyring makes it files.ErrNotFound).
			err = h.p.Delete(t.Context(), h.key, up.ID)
			assertProviderError(t, h, err, http.StatusNotFound, false)

			up, err = h.p.Upload(t.Context(), h.key, providers.File{Name: "b.txt", Body: strings.NewReader("hello")})
			if err != nil {
				t.Fatal(err)
			}
			h.stand.FailDeletes(http.StatusInternalServerError)
			err = h.p.Delete(t.Context(), h.key, up.ID)
			pe := assertProviderError(t, h, err, http.StatusInternalServerError, false)
			if pe.Op != "delete" || pe.RequestID == "" {
				t.Fatalf("ProviderError %+v", pe)
			}
			if err := h.p.Delete(t.Context(), seal.NewSecret(wrongKey), up.ID); !errors.Is(err, providers.ErrProvider) {
				t.Fatalf("delete with a wrong key: %v", err)
			}
		})
	}
}

func TestUploadRefusesBeforeSending(t *testing.T) {
	for _, pc := range cases {
		t.Run(pc.name, func(t *testing.T) {
			h := newHarness(t, pc, providers.Options{})
			tests := []struct {
				name string
				key  seal.Secret
				file providers.File
				want error
			}{
				{"empty key", seal.Secret{}, providers.File{Name: "a", Body: strings.NewReader("x")}, providers.ErrInvalidKey},
				{"key with newline", seal.NewSecret("sk-a\r\nX-Evil: 1"), providers.File{Name: "a", Body: strings.NewReader("x")}, providers.ErrInvalidKey},
				{"empty name", h.key, providers.File{Body: strings.NewReader("x")}, providers.ErrInvalidFile},
				{"name with newline", h.key, providers.File{Name: "a\r\nb", Body: strings.NewReader("x")}, providers.ErrInvalidFile},
				{"bad content type", h.key, providers.File{Name: "a", ContentType: "text/plain; x", Body: strings.NewReader("x")}, providers.ErrInvalidFile},
				{"no body", h.key, providers.File{Name: "a"}, providers.ErrInvalidFile},
			}
			for _, tt := range tests {
				t.Run(tt.name, func(t *testing.T) {
					if _, err := h.p.Upload(t.Context(), tt.key, tt.file); !errors.Is(err, tt.want) {
						t.Fatalf("err = %v, want %v", err, tt.want)
					}
				})
			}
			if n := len(h.stand.Requests()); n != 0 {
				t.Fatalf("%d requests sent", n)
			}
		})
	}
}

func TestUploadQuotesFilename(t *testing.T) {
	for _, pc := range cases {
		t.Run(pc.name, func(t *testing.T) {
			h := newHarness(t, pc, providers.Options{})
			const name = `odd "name" with \ backslash.txt`
			if _, err := h.p.Upload(t.Context(), h.key, providers.File{Name: name, Body: strings.NewReader("x")}); err != nil {
				t.Fatal(err)
			}
			if got := h.stand.Files()[0]; got.Filename != name || got.ContentType != "application/octet-stream" {
				t.Fatalf("filename %q content type %q", got.Filename, got.ContentType)
			}
		})
	}
}

func TestUploadUnreadableAnswer(t *testing.T) {
	for _, pc := range cases {
		t.Run(pc.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				_, _ = io.Copy(io.Discard, r.Body)
				w.Header().Set("request-id", "req_odd")
				w.Header().Set("x-request-id", "req_odd")
				_, _ = io.WriteString(w, `{"id":"", "unexpected": true}`)
			}))
			defer srv.Close()
			h := newHarness(t, pc, providers.Options{BaseURL: srv.URL + "/v1"})
			_, err := h.p.Upload(t.Context(), h.key, providers.File{Name: "a.txt", Body: strings.NewReader("x")})
			pe := assertProviderError(t, h, err, http.StatusOK, false)
			if pe.RequestID != "req_odd" {
				t.Fatalf("request id %q", pe.RequestID)
			}
			if h.logs.FilterLevelExact(zapcore.WarnLevel).Len() != 1 {
				t.Fatal("an accepted upload with an unreadable answer must be logged as a warning")
			}
		})
	}
}

func TestUploadConcurrent(t *testing.T) {
	for _, pc := range cases {
		t.Run(pc.name, func(t *testing.T) {
			h := newHarness(t, pc, providers.Options{})
			const n = 8
			sums := make([]string, n)
			ids := make([]string, n)
			var wg sync.WaitGroup
			errs := make(chan error, n)
			for i := range n {
				wg.Go(func() {
					r, sum := body(int64(256<<10+i), uint64(10+i))
					sums[i] = sum
					up, err := h.p.Upload(t.Context(), h.key, providers.File{Name: fmt.Sprintf("f%d.bin", i), Body: r})
					ids[i] = up.ID
					errs <- err
				})
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				if err != nil {
					t.Fatal(err)
				}
			}
			for i := range n {
				f, ok := h.stand.File(ids[i])
				if !ok || f.SHA256 != sums[i] || f.Filename != fmt.Sprintf("f%d.bin", i) {
					t.Fatalf("upload %d: stored %+v (found %v)", i, f, ok)
				}
			}
		})
	}
}

func TestNewChecksBaseURL(t *testing.T) {
	tests := []struct {
		url string
		ok  bool
	}{
		{"https://api.openai.com/v1", true},
		{"https://api.anthropic.com/", true},
		{"http://127.0.0.1:8080/v1", true},
		{"http://localhost:8080", true},
		{"http://[::1]:8080", true},
		{"http://api.openai.com/v1", false},
		{"http://10.0.0.5/v1", false},
		{"ftp://api.openai.com", false},
		{"https://user:pw@api.openai.com", false},
		{"https://api.openai.com/v1?x=1", false},
		{"https:///v1", false},
		{"", false},
	}
	for _, tt := range tests {
		t.Run(tt.url, func(t *testing.T) {
			for _, name := range files.Providers() {
				_, err := providers.New(name, providers.Options{BaseURL: tt.url}, zap.NewNop())
				if (err == nil) != tt.ok {
					t.Fatalf("%s: err = %v, want ok=%v", name, err, tt.ok)
				}
			}
		})
	}
	if _, err := providers.New("mistral", providers.Options{BaseURL: "https://x"}, zap.NewNop()); !errors.Is(err, providers.ErrUnknownProvider) {
		t.Fatalf("unknown provider: %v", err)
	}
	for _, name := range files.Providers() {
		p, err := providers.New(name, providers.Options{BaseURL: "https://example.com"}, zap.NewNop())
		if err != nil || p.Name() != name {
			t.Fatalf("New(%s): %v, %v", name, p, err)
		}
	}
}

// BenchmarkUpload compares each provider's upload with a baseline: the same
// bytes POSTed chunked, without multipart or the pipe, to a server that
// hashes them as the stand-ins do. Compare ns/op; run with -count to
// interleave rounds.
func BenchmarkUpload(b *testing.B) {
	const size = 16 << 20
	payload := bytes.Repeat([]byte("0123456789abcdef"), size/16)
	b.Run("baseline", func(b *testing.B) {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			h := sha256.New()
			_, _ = io.Copy(h, r.Body)
			_, _ = io.WriteString(w, hex.EncodeToString(h.Sum(nil)))
		}))
		defer srv.Close()
		b.SetBytes(size)
		b.ReportAllocs()
		for b.Loop() {
			// io.MultiReader hides the length, so the request is chunked.
			resp, err := http.Post(srv.URL, "application/octet-stream", io.MultiReader(bytes.NewReader(payload)))
			if err != nil {
				b.Fatal(err)
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
	})
	for _, pc := range cases {
		b.Run(pc.name, func(b *testing.B) {
			stand := pc.standIn(b)
			p, err := pc.provider(providers.Options{BaseURL: stand.BaseURL}, zap.NewNop())
			if err != nil {
				b.Fatal(err)
			}
			key := seal.NewSecret(stand.Key)
			b.SetBytes(size)
			b.ReportAllocs()
			for b.Loop() {
				up, err := p.Upload(b.Context(), key, providers.File{Name: "b.bin", Body: bytes.NewReader(payload)})
				if err != nil {
					b.Fatal(err)
				}
				// The stand-in keeps uploads on disk: do not let them pile up.
				b.StopTimer()
				if err := p.Delete(b.Context(), key, up.ID); err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
			}
		})
	}
}
