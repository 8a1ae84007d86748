package providers

import (
	"context"
	"errors"
	"fmt"
	"io"
	"mime"
	"net"
	"net/http"
	"net/textproto"
	"net/url"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/aigateway/gateway/files"
	"github.com/aigateway/gateway/internal/telemetry"
	"github.com/aigateway/gateway/policy/keys/seal"
	"go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp"
	"go.uber.org/zap"
)

const (
	// maxAnswerBytes caps how much of a provider's answer is read: file
	// records and error bodies are a few hundred bytes.
	maxAnswerBytes = 1 << 20
	// copyBufferBytes is the one buffer an upload uses between the caller's
	// reader and the request body, and so the size of a chunk on the wire:
	// each is a send of its own (the transport flushes a request's chunks),
	// and 32 KiB ones cost 1.3× the CPU per GB of these.
	copyBufferBytes = 256 << 10
	// maxLoggedMessage caps the provider error text logged at debug.
	maxLoggedMessage = 512
	// settleTimeout bounds the wait for the answer to an upload whose
	// caller went away after the whole file was sent (see Upload).
	settleTimeout = 30 * time.Second
)

// dialect is what differs between providers' Files APIs: data and pure
// functions, one value per provider (openAIDialect, anthropicDialect). The
// HTTP machinery, the same for both, is Client's.
type dialect struct {
	// name is the provider's name (ProviderOpenAI, ProviderAnthropic).
	name string
	// baseURL is where the provider's own API lives, Options.BaseURL's
	// usual value; it is named when a configured one is refused.
	baseURL string
	// filesPath is appended to the base URL for uploads and lists; a file's
	// path is filesPath + "/" + id.
	filesPath string
	// fields are form fields sent before the file part of an upload.
	fields [][2]string
	// keyHeader carries the key, after keyPrefix ("Bearer ").
	keyHeader, keyPrefix string
	// versionHeaders are the protocol headers every request carries.
	versionHeaders [][2]string
	// requestIDHeader carries the provider's request id in answers.
	requestIDHeader string
	// decodeUpload reads a successful upload answer.
	decodeUpload func(body []byte) (Uploaded, error)
	// decodeError reads an error answer: the provider's error type, its
	// message (logged at debug only) and a request id found in the body.
	decodeError func(body []byte) (typ, message, requestID string)
	// listQuery turns a page request into the provider's query parameters;
	// reversed says the provider is asked in the opposite order, so the
	// page must be reversed (how OpenAI pages backwards).
	listQuery func(q files.ProviderListQuery) (query string, reversed bool, err error)
	// decodeList reads a page of the file list; decodeInfo one file's
	// metadata.
	decodeList func(body []byte) (files.ProviderPage, error)
	decodeInfo func(body []byte) (files.ProviderFileInfo, error)
	// checkDeleted reads a delete's answer: it must say the file is gone.
	checkDeleted func(body []byte, id string) error
	// uploads says the provider has an Uploads resource at /uploads
	// (OpenAI's: a file sent in parts).
	uploads bool
}

// Client is one provider's Files API, spoken in that provider's dialect
// over HTTP: NewOpenAI and NewAnthropic make one. It implements Provider,
// keeps connections to the provider alive between calls, never follows a
// redirect, and never logs the key or puts it in an error. Safe for
// concurrent use.
type Client struct {
	d       *dialect
	timeout time.Duration
	http    *http.Client
	log     *zap.Logger

	// Built once, so that a call builds only what is its own (the key's
	// header, a file's path, a page's query): the files endpoint, parsed
	// (a call's URL is a copy of it), and the protocol headers.
	filesURL    url.URL
	uploadsBase url.URL // {base}/uploads, for a dialect with uploads
	keyHeader   string  // d.keyHeader, canonical
	headers     []header
}

// header is a header every request carries, its value shared by all of
// them: the transport only reads a request's headers.
type header struct {
	name  string   // canonical
	value []string // one value; its capacity is its length, so an append copies
}

// Accept headers, shared by every request.
var (
	acceptJSON = []string{"application/json"}
	acceptAny  = []string{"*/*"}
)

var _ Provider = (*Client)(nil)

// Name is the provider's name: ProviderOpenAI or ProviderAnthropic.
func (c *Client) Name() string { return c.d.name }

// errUploadFinished is what an upload's body reads once the request is
// over (the provider answered early, or the transport gave up): the
// transport aborts a body still being sent.
var errUploadFinished = errors.New("byok: upload finished")

func newClient(d *dialect, opts Options, log *zap.Logger) (*Client, error) {
	if log == nil {
		log = zap.NewNop()
	}
	base, err := checkBaseURL(opts.BaseURL)
	if err != nil {
		return nil, fmt.Errorf("byok: %s base_url: %w (the provider's own is %s)", d.name, err, d.baseURL)
	}
	filesURL, err := url.Parse(base + d.filesPath)
	if err != nil {
		return nil, fmt.Errorf("byok: %s base_url: %w", d.name, err)
	}
	uploadsURL, err := url.Parse(base + "/uploads")
	if err != nil {
		return nil, fmt.Errorf("byok: %s base_url: %w", d.name, err)
	}
	headers := make([]header, len(d.versionHeaders))
	for i, kv := range d.versionHeaders {
		headers[i] = header{http.CanonicalHeaderKey(kv[0]), []string{kv[1]}}
	}
	orDefault := func(d, def time.Duration) time.Duration {
		if d > 0 {
			return d
		}
		return def
	}
	dialer := &net.Dialer{Timeout: orDefault(opts.DialTimeout, DefaultDialTimeout), KeepAlive: 30 * time.Second}
	tr := &http.Transport{
		// A proxy from the environment is fine: https requests tunnel
		// through CONNECT, so the proxy never sees the key.
		Proxy:                 http.ProxyFromEnvironment,
		DialContext:           dialer.DialContext,
		ForceAttemptHTTP2:     true,
		TLSHandshakeTimeout:   orDefault(opts.TLSHandshakeTimeout, DefaultDialTimeout),
		ResponseHeaderTimeout: orDefault(opts.ResponseHeaderTimeout, DefaultResponseHeaderTimeout),
		IdleConnTimeout:       90 * time.Second,
		// A busy replica calls one host from many requests at once; fewer
		// idle connections than callers means one closed and one dialled
		// for most calls (16 was too few for 64 concurrent passthroughs).
		MaxIdleConns:        256,
		MaxIdleConnsPerHost: 128,
		WriteBufferSize:     64 << 10,
	}
	var transport http.RoundTripper = tr
	if telemetry.Enabled() {
		// A client span per call, and the traceparent sent on. The key
		// travels in a header, which the instrumentation does not record.
		transport = otelhttp.NewTransport(tr, otelhttp.WithSpanNameFormatter(func(_ string, r *http.Request) string {
			return d.name + " " + r.Method
		}))
	}
	return &Client{
		d:           d,
		filesURL:    *filesURL,
		uploadsBase: *uploadsURL,
		keyHeader:   http.CanonicalHeaderKey(d.keyHeader),
		headers:     headers,
		timeout:     opts.Timeout,
		http: &http.Client{
			Transport: transport,
			// Never follow a redirect: the request carries the key, and a
			// redirect (even to the same host over http) would resend it
			// somewhere we did not choose. A 3xx is an error.
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		},
		log: log.With(zap.String("provider", d.name)),
	}, nil
}

// target is the files endpoint followed by path ("" or "/…", made of
// characters a path needs no escaping for) and query.
func (c *Client) target(path, query string) *url.URL {
	u := c.filesURL
	if path != "" {
		u.Path += path
		if u.RawPath != "" {
			u.RawPath += path
		}
	}
	u.RawQuery = query
	return &u
}

// request is a request to u carrying the key and the protocol headers; u
// comes from Client.target, so no URL is parsed.
func (c *Client) request(ctx context.Context, method string, u *url.URL, key seal.Secret, accept []string, body io.Reader) (*http.Request, error) {
	req, err := http.NewRequestWithContext(ctx, method, "", body)
	if err != nil {
		return nil, err
	}
	req.URL, req.Host = u, u.Host
	h := make(http.Header, len(c.headers)+3)
	h[c.keyHeader] = []string{c.d.keyPrefix + key.Reveal()}
	h["Accept"] = accept
	for _, f := range c.headers {
		h[f.name] = f.value
	}
	req.Header = h
	return req, nil
}

// checkBaseURL accepts https URLs, and http ones on loopback hosts only.
func checkBaseURL(raw string) (string, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return "", fmt.Errorf("not a URL")
	}
	switch {
	case u.Host == "":
		return "", fmt.Errorf("%q has no host", raw)
	case u.User != nil:
		return "", fmt.Errorf("must not carry credentials")
	case u.RawQuery != "" || u.Fragment != "":
		return "", fmt.Errorf("%q must not have a query or fragment", raw)
	case u.Scheme == "https":
	case u.Scheme == "http" && isLoopback(u.Hostname()):
	case u.Scheme == "http":
		return "", fmt.Errorf("%q must use https: provider keys never travel in clear text", raw)
	default:
		return "", fmt.Errorf("%q must be an https URL", raw)
	}
	return strings.TrimRight(u.String(), "/"), nil
}

func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// checkKey refuses keys that cannot go in a header, before anything is sent.
func checkKey(key seal.Secret) error {
	k := key.Reveal()
	if k == "" {
		return ErrInvalidKey
	}
	for i := 0; i < len(k); i++ {
		if c := k[i]; c < 0x21 || c > 0x7e {
			return ErrInvalidKey
		}
	}
	return nil
}

// CheckKey reports ErrInvalidKey when key is empty or could not be sent in
// an HTTP header; `gateway byok set` calls it before sealing a key.
func CheckKey(key seal.Secret) error { return checkKey(key) }

// filePartHeader builds the multipart header of the file part.
func filePartHeader(f File) (textproto.MIMEHeader, error) {
	if f.Body == nil {
		return nil, fmt.Errorf("%w: no body", ErrInvalidFile)
	}
	if f.Name == "" || !utf8.ValidString(f.Name) || strings.ContainsFunc(f.Name, isControl) {
		return nil, fmt.Errorf("%w: file name is empty, not UTF-8, or has control characters", ErrInvalidFile)
	}
	ctype := "application/octet-stream"
	if f.ContentType != "" {
		mt, params, err := mime.ParseMediaType(f.ContentType)
		if err != nil {
			return nil, fmt.Errorf("%w: content type: %v", ErrInvalidFile, err)
		}
		if ctype = mime.FormatMediaType(mt, params); ctype == "" {
			return nil, fmt.Errorf("%w: content type", ErrInvalidFile)
		}
	}
	// The quoting multipart.Writer.CreateFormFile uses: backslash escapes,
	// UTF-8 as is (what browsers and curl send, and what providers parse).
	esc := strings.NewReplacer(`\`, `\\`, `"`, `\"`)
	h := make(textproto.MIMEHeader)
	h.Set("Content-Disposition", `form-data; name="file"; filename="`+esc.Replace(f.Name)+`"`)
	h.Set("Content-Type", ctype)
	return h, nil
}

func isControl(r rune) bool { return r < 0x20 || r == 0x7f }

// Upload streams f as multipart/form-data to the provider (see Provider).
//
// The request goes out with chunked encoding while f.Body is read (see
// formBody): memory is one copy buffer and the transport's write buffer.
// When f.Body fails, the transport aborts the request mid-body (no
// terminating chunk, so the provider sees a truncated upload and stores
// nothing), and f.Body's error is returned wrapped.
func (c *Client) Upload(ctx context.Context, key seal.Secret, f File) (Uploaded, error) {
	if err := checkKey(key); err != nil {
		return Uploaded{}, err
	}
	partHeader, err := filePartHeader(f)
	if err != nil {
		return Uploaded{}, err
	}
	body, err := newFormBody(c.d.fields, partHeader, f.Body)
	if err != nil {
		return Uploaded{}, fmt.Errorf("byok: %s upload: %w", c.d.name, err)
	}
	// The caller going away (the client disconnected, the server shuts
	// down) stops a file still being sent: the provider then keeps nothing.
	// Once the whole file is sent the provider may keep it, and only its
	// answer names it, so that answer is awaited, for at most settleTimeout
	// more: the caller, learning the id, deletes a file it no longer wants.
	// A deadline of the caller's still ends the call.
	parent := ctx
	ctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	defer cancel()
	if d, ok := parent.Deadline(); ok {
		var cancelDeadline context.CancelFunc
		ctx, cancelDeadline = context.WithDeadline(ctx, d)
		defer cancelDeadline()
	}
	ctx, cancelTimeout := c.withTimeout(ctx)
	defer cancelTimeout()
	stop := context.AfterFunc(parent, func() {
		if body.abandon() {
			cancel()
			return
		}
		// Calling cancel once Upload has returned does nothing.
		time.AfterFunc(settleTimeout, cancel)
	})
	defer stop()
	req, err := c.request(ctx, http.MethodPost, c.target("", ""), key, acceptJSON, body)
	if err != nil {
		return Uploaded{}, fmt.Errorf("byok: %s upload: %w", c.d.name, err)
	}
	req.ContentLength = -1 // unknown: chunked
	req.Header["Content-Type"] = []string{body.ContentType()}

	start := time.Now()
	resp, err := c.http.Do(req)
	var answer []byte
	if err == nil {
		answer, err = io.ReadAll(io.LimitReader(resp.Body, maxAnswerBytes))
		resp.Body.Close()
	}
	if ferr := body.finish(); ferr != nil {
		// The caller's reader failed (size limit, client gone): that is the
		// cause, whatever the transport made of the aborted request.
		return Uploaded{}, fmt.Errorf("byok: %s upload: reading the file: %w", c.d.name, ferr)
	}
	if err != nil {
		return Uploaded{}, c.transportError("upload", parent, resp, err)
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return Uploaded{}, c.answerError("upload", resp, answer, key)
	}
	up, err := c.d.decodeUpload(answer)
	if err != nil {
		// The provider may hold a file we cannot name: say so loudly.
		c.log.Warn("provider accepted an upload but its answer is unreadable",
			zap.String("request_id", c.requestID(resp, "")), zap.Error(err))
		return Uploaded{}, &ProviderError{Provider: c.d.name, Op: "upload", Status: resp.StatusCode,
			RequestID: c.requestID(resp, ""), Err: err}
	}
	up.RequestID = c.requestID(resp, "")
	c.log.Debug("file uploaded to provider", zap.String("file_id", up.ID), zap.Int64("bytes", up.Bytes),
		zap.String("request_id", up.RequestID), zap.Duration("took", time.Since(start)))
	return up, nil
}

// Delete removes a provider file. A 404 is a *ProviderError like any
// refusal: the caller decides whether a file already gone counts as done.
func (c *Client) Delete(ctx context.Context, key seal.Secret, id string) error {
	if err := checkFileID(id); err != nil {
		return fmt.Errorf("byok: %s delete: %w", c.d.name, err)
	}
	resp, err := c.getJSON(ctx, "delete", http.MethodDelete, filePath(id), "", key, maxAnswerBytes,
		func(body []byte) error { return c.d.checkDeleted(body, id) })
	if err != nil {
		return err
	}
	c.log.Debug("provider file deleted", zap.String("file_id", id), zap.String("request_id", c.requestID(resp, "")))
	return nil
}

// withTimeout bounds a call by Options.Timeout. Without one, the call runs
// in ctx itself: nothing of it outlives the answer's body, which is always
// closed, so there is nothing to cancel.
func (c *Client) withTimeout(ctx context.Context) (context.Context, context.CancelFunc) {
	if c.timeout > 0 {
		return context.WithTimeout(ctx, c.timeout)
	}
	return ctx, func() {}
}

// transportError classifies a request that got no (complete) answer. A
// caller that cancelled gets its own context error back, so the HTTP layer
// can tell a client that went away from a provider that failed.
func (c *Client) transportError(op string, parent context.Context, resp *http.Response, err error) error {
	if perr := parent.Err(); perr != nil && !errors.Is(perr, context.DeadlineExceeded) {
		return fmt.Errorf("byok: %s %s: %w", c.d.name, op, context.Cause(parent))
	}
	var ne net.Error
	timeout := errors.Is(err, context.DeadlineExceeded) || (errors.As(err, &ne) && ne.Timeout())
	pe := &ProviderError{Provider: c.d.name, Op: op, Timeout: timeout, Err: err}
	if resp != nil {
		pe.Status, pe.RequestID = resp.StatusCode, c.requestID(resp, "")
	}
	return pe
}

// answerError turns a non-2xx answer into a *ProviderError. The provider's
// message may quote the request, so it is logged at debug level only, with
// any occurrence of the key blanked, and never returned.
func (c *Client) answerError(op string, resp *http.Response, body []byte, key seal.Secret) error {
	typ, msg, bodyID := c.d.decodeError(body)
	pe := &ProviderError{Provider: c.d.name, Op: op, Status: resp.StatusCode,
		RequestID: c.requestID(resp, bodyID), Type: safeToken(typ, 64)}
	if resp.StatusCode == http.StatusTooManyRequests {
		pe.RetryAfter = parseRetryAfter(resp.Header.Get("Retry-After"), time.Now())
	}
	if resp.StatusCode >= 300 && resp.StatusCode <= 399 {
		c.log.Warn("provider answered a redirect, not followed", zap.String("op", op), zap.Int("status", resp.StatusCode),
			zap.String("request_id", pe.RequestID))
		return pe
	}
	if c.log.Core().Enabled(zap.DebugLevel) {
		if k := key.Reveal(); k != "" {
			msg = strings.ReplaceAll(msg, k, seal.Redacted)
		}
		if len(msg) > maxLoggedMessage {
			msg = msg[:maxLoggedMessage] + "…"
		}
		c.log.Debug("provider refused", zap.String("op", op), zap.Int("status", resp.StatusCode),
			zap.String("request_id", pe.RequestID), zap.String("type", pe.Type), zap.String("message", msg))
	}
	return pe
}

// requestID returns the provider's request id from the answer's header, or
// fallback, made safe to show to clients.
func (c *Client) requestID(resp *http.Response, fallback string) string {
	id := resp.Header.Get(c.d.requestIDHeader)
	if id == "" {
		id = fallback
	}
	return safeToken(id, 128)
}

// safeToken keeps s only if it is a short identifier; provider answers are
// untrusted and the result ends up in client-visible metadata.
func safeToken(s string, max int) string {
	if len(s) > max {
		return ""
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-' || c == '.' || c == ':') {
			return ""
		}
	}
	return s
}
