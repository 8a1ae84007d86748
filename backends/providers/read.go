package providers

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/aigateway/gateway/files"
	"github.com/aigateway/gateway/policy/keys/seal"
	"go.uber.org/zap"
)

const (
	// maxPageBytes caps one page of a provider's file list: up to 1000
	// records of a few hundred bytes each.
	maxPageBytes = 4 << 20
	// maxListLimit is the largest page asked of a provider (Anthropic's
	// maximum, and the edge's); defaultListLimit is used when none is given.
	maxListLimit     = 1000
	defaultListLimit = 100
	// maxFileIDBytes bounds a provider file id; real ones are ~30 bytes.
	maxFileIDBytes = 128
)

// checkFileID refuses ids no provider issues, before anything is sent: an id
// goes into the request path, so "..", slashes or escapes must never reach
// it.
func checkFileID(id string) error {
	if id == "" || len(id) > maxFileIDBytes || id == "." || id == ".." {
		return ErrInvalidFileID
	}
	for i := 0; i < len(id); i++ {
		if c := id[i]; !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-' || c == '.') {
			return ErrInvalidFileID
		}
	}
	return nil
}

// listLimit is q.Limit within what providers accept.
func listLimit(q files.ProviderListQuery) int {
	switch {
	case q.Limit < 1:
		return defaultListLimit
	case q.Limit > maxListLimit:
		return maxListLimit
	}
	return q.Limit
}

// checkListQuery refuses a page request no provider can answer.
func checkListQuery(q files.ProviderListQuery) error {
	if q.AfterID != "" && q.BeforeID != "" {
		return fmt.Errorf("%w: after and before together", ErrUnsupportedQuery)
	}
	for _, id := range []string{q.AfterID, q.BeforeID} {
		if id != "" && checkFileID(id) != nil {
			return fmt.Errorf("%w: the paging id is not a file id", ErrUnsupportedQuery)
		}
	}
	return nil
}

// filePath is the path of file id below the files endpoint; checkFileID
// has made sure id needs no escaping.
func filePath(id string) string { return "/" + id }

// send issues a request without a body, carrying the key and protocol
// headers, and returns a 2xx answer whose body the caller closes before
// calling done. Anything else is returned as an error: a *ProviderError
// (refusal, redirect, no answer) or the caller's own context error.
func (c *Client) send(ctx context.Context, op, method, path, query string, key seal.Secret, accept []string) (resp *http.Response, done context.CancelFunc, err error) {
	if err := checkKey(key); err != nil {
		return nil, nil, err
	}
	parent := ctx
	ctx, cancel := c.withTimeout(ctx)
	req, err := c.request(ctx, method, c.target(path, query), key, accept, nil)
	if err != nil {
		cancel()
		return nil, nil, fmt.Errorf("byok: %s %s: %w", c.d.name, op, err)
	}
	resp, err = c.http.Do(req)
	if err != nil {
		cancel()
		return nil, nil, c.transportError(op, parent, nil, err)
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		// The status is the answer; an error body cut short changes
		// nothing but what is logged.
		answer, _ := io.ReadAll(io.LimitReader(resp.Body, maxAnswerBytes))
		resp.Body.Close()
		cancel()
		return nil, nil, c.answerError(op, resp, answer, key)
	}
	return resp, cancel, nil
}

// getJSON sends a request and hands its JSON answer, at most max bytes, to
// decode, whose error makes the answer unreadable; it returns the answer,
// its body closed. The bytes are lent for the call only: the buffer they
// are in serves the next answer.
func (c *Client) getJSON(ctx context.Context, op, method, path, query string, key seal.Secret, max int64, decode func(body []byte) error) (*http.Response, error) {
	resp, done, err := c.send(ctx, op, method, path, query, key, acceptJSON)
	if err != nil {
		return nil, err
	}
	defer done()
	buf := answerBuffers.Get().(*bytes.Buffer)
	defer putAnswerBuffer(buf)
	if n := resp.ContentLength; n > 0 && n <= max {
		// Room for the answer and for the read that finds its end.
		buf.Grow(int(n) + bytes.MinRead)
	}
	_, err = buf.ReadFrom(io.LimitReader(resp.Body, max+1))
	resp.Body.Close()
	switch {
	case err != nil:
		return nil, c.transportError(op, ctx, resp, err)
	case int64(buf.Len()) > max:
		return nil, c.unreadable(op, resp, fmt.Errorf("answer larger than %d bytes", max))
	}
	if err := decode(buf.Bytes()); err != nil {
		return nil, c.unreadable(op, resp, err)
	}
	return resp, nil
}

// answerBuffers hold JSON answers while they are decoded; the decoders
// copy what they keep.
var answerBuffers = sync.Pool{New: func() any { return new(bytes.Buffer) }}

// maxPooledAnswer is the largest buffer kept for another answer: a page of
// a few hundred records. A larger one, read for a rare page of a thousand,
// is left to the garbage collector rather than held by the pool.
const maxPooledAnswer = 256 << 10

func putAnswerBuffer(buf *bytes.Buffer) {
	if buf.Cap() <= maxPooledAnswer {
		buf.Reset()
		answerBuffers.Put(buf)
	}
}

// unreadable is a 2xx answer that does not say what it should.
func (c *Client) unreadable(op string, resp *http.Response, err error) error {
	pe := &ProviderError{Provider: c.d.name, Op: op, Status: resp.StatusCode, RequestID: c.requestID(resp, ""), Err: err}
	c.log.Warn("provider answer unreadable", zap.String("op", op), zap.String("request_id", pe.RequestID), zap.Error(err))
	return pe
}

// List fetches one page of the provider's files (see Provider).
func (c *Client) List(ctx context.Context, key seal.Secret, q files.ProviderListQuery) (files.ProviderPage, error) {
	if err := checkListQuery(q); err != nil {
		return files.ProviderPage{}, fmt.Errorf("byok: %s list: %w", c.d.name, err)
	}
	query, reversed, err := c.d.listQuery(q)
	if err != nil {
		return files.ProviderPage{}, fmt.Errorf("byok: %s list: %w", c.d.name, err)
	}
	var page files.ProviderPage
	_, err = c.getJSON(ctx, "list", http.MethodGet, "", query, key, maxPageBytes, func(body []byte) (err error) {
		page, err = c.d.decodeList(body)
		return err
	})
	if err != nil {
		return files.ProviderPage{}, err
	}
	if reversed {
		slices.Reverse(page.Files)
	}
	return page, nil
}

// Stat fetches the metadata of the provider's file id (see Provider).
func (c *Client) Stat(ctx context.Context, key seal.Secret, id string) (files.ProviderFileInfo, error) {
	if err := checkFileID(id); err != nil {
		return files.ProviderFileInfo{}, fmt.Errorf("byok: %s stat: %w", c.d.name, err)
	}
	var info files.ProviderFileInfo
	_, err := c.getJSON(ctx, "stat", http.MethodGet, filePath(id), "", key, maxAnswerBytes, func(body []byte) (err error) {
		if info, err = c.d.decodeInfo(body); err == nil && info.ID != id {
			err = errors.New("answer describes another file")
		}
		return err
	})
	if err != nil {
		return files.ProviderFileInfo{}, err
	}
	return info, nil
}

// Content opens the bytes of the provider's file id (see Provider). The
// answer's body is handed over as it arrives, never buffered;
// Options.Timeout keeps running until it is closed, as it covers an
// upload's body.
func (c *Client) Content(ctx context.Context, key seal.Secret, id string) (files.ProviderContent, error) {
	if err := checkFileID(id); err != nil {
		return files.ProviderContent{}, fmt.Errorf("byok: %s content: %w", c.d.name, err)
	}
	resp, done, err := c.send(ctx, "content", http.MethodGet, filePath(id)+"/content", "", key, acceptAny)
	if err != nil {
		return files.ProviderContent{}, err
	}
	ctype := "application/octet-stream"
	if mt, params, err := mime.ParseMediaType(resp.Header.Get("Content-Type")); err == nil {
		if f := mime.FormatMediaType(mt, params); f != "" {
			ctype = f
		}
	}
	length := resp.ContentLength
	if length < 0 {
		length = -1
	}
	c.log.Debug("provider file content opened", zap.String("file_id", id), zap.Int64("length", length),
		zap.String("request_id", c.requestID(resp, "")))
	return files.ProviderContent{
		Body:        &contentBody{c: c, parent: ctx, resp: resp, done: done},
		ContentType: ctype,
		Length:      length,
	}, nil
}

// contentBody is a provider's answer body being streamed to the caller. Its
// read errors are classified like any other failure of the provider.
type contentBody struct {
	c      *Client
	parent context.Context
	resp   *http.Response
	done   context.CancelFunc
	once   sync.Once
}

func (b *contentBody) Read(p []byte) (int, error) {
	n, err := b.resp.Body.Read(p)
	if err != nil && err != io.EOF {
		err = b.c.transportError("content", b.parent, b.resp, err)
	}
	return n, err
}

// Close ends the transfer and releases the call's timeout.
func (b *contentBody) Close() error {
	err := b.resp.Body.Close()
	b.once.Do(b.done)
	return err
}

// parseRetryAfter reads a Retry-After header: delay-seconds or an HTTP date
// (RFC 9110 §10.2.3). Zero when absent, malformed or already past.
func parseRetryAfter(v string, now time.Time) time.Duration {
	if v == "" {
		return 0
	}
	if secs, err := strconv.ParseInt(v, 10, 64); err == nil {
		if secs <= 0 {
			return 0
		}
		// A day is plenty; a huge value must not overflow.
		return time.Duration(min(secs, 86400)) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil {
		if d := t.Sub(now); d > 0 {
			return min((d + time.Second - 1).Truncate(time.Second), 86400*time.Second)
		}
	}
	return 0
}
