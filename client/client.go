// Package client is a typed Go client of the gateway's API under /api/v1,
// for the other components of the service. It uses the standard library
// only.
//
// A Client is safe for concurrent use. Every call takes a context: its
// deadline bounds the call, retries included, and an X-Request-Id put in it
// with WithRequestID travels with the request, so one id follows a piece of
// work through every component's logs.
//
// Errors from the gateway are *Error (status, message, metadata); use
// errors.As. Calls that are safe to repeat (reads, deletes, and creations
// and updates sent with an Idempotency-Key, which the client always sends)
// are retried on 429 and 503, after the answer's Retry-After plus a random
// part, at most Retry.MaxAttempts times in all and never past the context's
// deadline. UploadFile is never retried: its body is streamed once.
// UploadLarge sends a file in parts and sends again a part that failed,
// from an io.ReaderAt or its buffer.
package client

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	mrand "math/rand/v2"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// Client calls one gateway with one key.
type Client struct {
	base      string // the API root, ending in /api/v1, no trailing slash
	key       string
	apiKeyHdr bool
	hc        *http.Client
	retry     Retry
	userAgent string
	// sleep waits d or until ctx ends; tests replace it.
	sleep func(ctx context.Context, d time.Duration) error
	// jitter returns a random duration in [0, d); tests replace it.
	jitter func(d time.Duration) time.Duration
}

// Retry bounds the retries of idempotent calls answered 429 or 503.
type Retry struct {
	// MaxAttempts is the number of tries in all, the first included; 1
	// turns retrying off.
	MaxAttempts int
	// MaxWait is the longest the client waits before one retry. An answer
	// asking for longer (Retry-After) is returned to the caller instead.
	// Zero: no bound but the context's deadline.
	MaxWait time.Duration
	// BaseDelay is the first wait when an answer has no Retry-After; it
	// doubles with each retry, up to MaxWait.
	BaseDelay time.Duration
}

// DefaultRetry is the retry policy of a new Client.
var DefaultRetry = Retry{MaxAttempts: 4, MaxWait: 30 * time.Second, BaseDelay: 250 * time.Millisecond}

// Option configures a Client.
type Option func(*Client)

// WithHTTPClient makes the client send its requests with hc (a transport
// with TLS settings, a proxy, tracing). The default is http.DefaultClient.
// hc's Timeout would cut a long download short: prefer contexts.
func WithHTTPClient(hc *http.Client) Option { return func(c *Client) { c.hc = hc } }

// WithRetry replaces DefaultRetry.
func WithRetry(r Retry) Option { return func(c *Client) { c.retry = r } }

// WithAPIKeyHeader sends the key as X-Api-Key instead of Authorization:
// Bearer (for a path through a proxy that owns Authorization).
func WithAPIKeyHeader() Option { return func(c *Client) { c.apiKeyHdr = true } }

// WithUserAgent sets the User-Agent, which names the calling component in
// the gateway's logs. It must not start with "OpenAI/" or "Anthropic/":
// those ask the gateway for another shape of file answers.
func WithUserAgent(ua string) Option { return func(c *Client) { c.userAgent = ua } }

// New returns a client of the gateway at baseURL, either the server's root
// (http://host:8080) or the API root (http://host:8080/api/v1), calling
// with key: a service key to read files for other components, an ordinary
// key to act in its workspace, a management key to manage workspaces.
func New(baseURL, key string, opts ...Option) (*Client, error) {
	u, err := url.Parse(baseURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("client: base URL %q must be an absolute http(s) URL", baseURL)
	}
	if key == "" {
		return nil, errors.New("client: a key is required")
	}
	base := strings.TrimSuffix(u.String(), "/")
	if !strings.HasSuffix(base, "/api/v1") {
		base += "/api/v1"
	}
	c := &Client{
		base: base, key: key, hc: http.DefaultClient, retry: DefaultRetry, userAgent: "gateway-client/1",
		sleep: sleepCtx, jitter: func(d time.Duration) time.Duration {
			if d <= 0 {
				return 0
			}
			return mrand.N(d)
		},
	}
	for _, o := range opts {
		o(c)
	}
	if c.retry.MaxAttempts < 1 {
		c.retry.MaxAttempts = 1
	}
	if ua := c.userAgent; strings.HasPrefix(ua, "OpenAI/") || strings.HasPrefix(ua, "Anthropic/") {
		return nil, fmt.Errorf("client: User-Agent %q would change the shape of file answers", ua)
	}
	return c, nil
}

// request is one call: what to send and whether it may be sent again.
type request struct {
	method string
	path   string // under the API root, already escaped
	query  url.Values
	header http.Header
	// body makes a fresh body for each try; nil sends none.
	body func() (io.Reader, int64, error)
	// idempotent calls are retried on 429 and 503.
	idempotent bool
}

// jsonBody makes a request body of v, encoded once.
func jsonBody(v any) (func() (io.Reader, int64, error), error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return func() (io.Reader, int64, error) { return bytes.NewReader(b), int64(len(b)), nil }, nil
}

// send performs r, retrying as the policy allows, and returns a 2xx (or
// 304) answer whose body the caller must close; any other answer is
// returned as *Error.
func (c *Client) send(ctx context.Context, r request) (*http.Response, error) {
	for attempt := 1; ; attempt++ {
		resp, err := c.once(ctx, r)
		if err != nil {
			return nil, err
		}
		if resp.StatusCode < 400 {
			return resp, nil
		}
		apiErr := readError(resp)
		if !r.idempotent || attempt >= c.retry.MaxAttempts ||
			(apiErr.StatusCode != http.StatusTooManyRequests && apiErr.StatusCode != http.StatusServiceUnavailable) {
			return nil, apiErr
		}
		wait, ok := c.backoff(apiErr.RetryAfter, attempt)
		if !ok {
			return nil, apiErr
		}
		if deadline, has := ctx.Deadline(); has && time.Until(deadline) < wait {
			return nil, apiErr // the answer would come too late anyway
		}
		if err := c.sleep(ctx, wait); err != nil {
			return nil, errors.Join(apiErr, err)
		}
	}
}

// backoff is the wait before retry number attempt: the server's
// Retry-After when it gave one, else BaseDelay doubled per retry; plus a
// random part of up to half of it, so clients refused together do not
// return together. ok is false when that is more than MaxWait.
func (c *Client) backoff(retryAfter time.Duration, attempt int) (time.Duration, bool) {
	wait := retryAfter
	if wait <= 0 {
		wait = c.retry.BaseDelay << (attempt - 1)
		if c.retry.MaxWait > 0 {
			wait = min(wait, c.retry.MaxWait)
		}
	}
	if c.retry.MaxWait > 0 && wait > c.retry.MaxWait {
		return 0, false
	}
	wait += c.jitter(wait / 2)
	if c.retry.MaxWait > 0 {
		wait = min(wait, c.retry.MaxWait)
	}
	return wait, true
}

// once sends r a single time.
func (c *Client) once(ctx context.Context, r request) (*http.Response, error) {
	u := c.base + r.path
	if len(r.query) > 0 {
		u += "?" + r.query.Encode()
	}
	var body io.Reader
	size := int64(0)
	if r.body != nil {
		var err error
		if body, size, err = r.body(); err != nil {
			return nil, err
		}
	}
	req, err := http.NewRequestWithContext(ctx, r.method, u, body)
	if err != nil {
		return nil, err
	}
	if body != nil {
		req.ContentLength = size // -1: unknown, sent chunked
		if size == 0 {
			req.Body = http.NoBody
		}
	}
	for k, vs := range r.header {
		req.Header[k] = vs
	}
	if c.apiKeyHdr {
		req.Header.Set("X-Api-Key", c.key)
	} else {
		req.Header.Set("Authorization", "Bearer "+c.key)
	}
	req.Header.Set("User-Agent", c.userAgent)
	if id := RequestIDFrom(ctx); id != "" {
		req.Header.Set("X-Request-Id", id)
	}
	return c.hc.Do(req)
}

// envelope is the API's wrapping of one answer: {"data": …}.
type envelope[T any] struct {
	Data T `json:"data"`
}

// sendJSON sends v as the JSON body of method path (with header's fields
// and Content-Type), retried when retry, and decodes the whole answer as
// a T.
func sendJSON[T any](ctx context.Context, c *Client, method, path string, header http.Header, v any, retry bool) (*T, error) {
	body, err := jsonBody(v)
	if err != nil {
		return nil, err
	}
	h := http.Header{"Content-Type": {"application/json"}}
	for k, vs := range header {
		h[k] = vs
	}
	r := request{method: method, path: path, header: h, body: body, idempotent: retry}
	resp, err := c.send(ctx, r)
	if err != nil {
		return nil, err
	}
	var out T
	if err := decode(r, resp, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// sendData is sendJSON returning the answer's "data".
func sendData[T any](ctx context.Context, c *Client, method, path string, header http.Header, v any, retry bool) (*T, error) {
	out, err := sendJSON[envelope[T]](ctx, c, method, path, header, v, retry)
	if err != nil {
		return nil, err
	}
	return &out.Data, nil
}

// getJSON GETs path and decodes the answer into v.
func (c *Client) getJSON(ctx context.Context, path string, query url.Values, v any) error {
	r := request{method: http.MethodGet, path: path, query: query, idempotent: true}
	resp, err := c.send(ctx, r)
	if err != nil {
		return err
	}
	return decode(r, resp, v)
}

// get GETs path and decodes the whole answer as a T.
func get[T any](ctx context.Context, c *Client, path string, query url.Values) (*T, error) {
	var v T
	if err := c.getJSON(ctx, path, query, &v); err != nil {
		return nil, err
	}
	return &v, nil
}

// getData GETs path and returns the answer's "data" as a T.
func getData[T any](ctx context.Context, c *Client, path string, query url.Values) (*T, error) {
	out, err := get[envelope[T]](ctx, c, path, query)
	if err != nil {
		return nil, err
	}
	return &out.Data, nil
}

// remove DELETEs path; a delete is idempotent, so it is retried.
func (c *Client) remove(ctx context.Context, path string, query url.Values) error {
	resp, err := c.send(ctx, request{method: http.MethodDelete, path: path, query: query, idempotent: true})
	if err != nil {
		return err
	}
	return resp.Body.Close()
}

// decode reads the JSON answer to r into v and closes it. It names the
// call from r, not from resp.Request, which a caller's RoundTripper may
// leave nil.
func decode(r request, resp *http.Response, v any) error {
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
		return fmt.Errorf("client: decode %s %s answer: %w", r.method, r.path, err)
	}
	return nil
}

// idempotencyKey makes a fresh Idempotency-Key: a retried creation is then
// recognised by the gateway and answered once.
func idempotencyKey() string {
	return rand.Text()
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// parseRetryAfter reads Retry-After in either of its forms (seconds or an
// HTTP date); zero when absent or unreadable.
func parseRetryAfter(v string, now time.Time) time.Duration {
	if v == "" {
		return 0
	}
	if s, err := strconv.Atoi(v); err == nil && s >= 0 {
		return time.Duration(s) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil && t.After(now) {
		return t.Sub(now)
	}
	return 0
}
