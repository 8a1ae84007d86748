package client

import (
	"context"
	"errors"
	"fmt"
	"io"
	"iter"
	"mime"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// File is a stored file's metadata.
type File struct {
	ID       string `json:"id"`
	Filename string `json:"filename"`
	// MimeType is the type the gateway found in the bytes.
	MimeType  string `json:"mime_type"`
	SizeBytes int64  `json:"size_bytes"`
	// Downloadable tells whether ordinary keys may read the content;
	// service keys always may.
	Downloadable bool      `json:"downloadable"`
	CreatedAt    time.Time `json:"created_at"`
}

// FileOption scopes a file call.
type FileOption func(url.Values)

// InWorkspace acts in the workspace with that id instead of the key's own
// (the key must be allowed to use it).
func InWorkspace(id string) FileOption { return func(q url.Values) { q.Set("workspace_id", id) } }

// OnProvider acts on the provider's Files API ("openai" or "anthropic")
// with the workspace's own stored key, instead of the gateway's storage.
func OnProvider(name string) FileOption { return func(q url.Values) { q.Set("provider", name) } }

func fileQuery(opts []FileOption) url.Values {
	q := url.Values{}
	for _, o := range opts {
		o(q)
	}
	return q
}

func filePath(id string) string { return "/files/" + url.PathEscape(id) }

// GetFile returns a file's metadata.
func (c *Client) GetFile(ctx context.Context, id string, opts ...FileOption) (*File, error) {
	return get[File](ctx, c, filePath(id), fileQuery(opts))
}

// DeleteFile removes a file and gives its bytes back to the workspace's
// quota. A file already gone is a 404 *Error.
func (c *Client) DeleteFile(ctx context.Context, id string, opts ...FileOption) error {
	return c.remove(ctx, filePath(id), fileQuery(opts))
}

// FilePage is one page of a workspace's files, newest first.
type FilePage struct {
	Files   []File `json:"data"`
	HasMore bool   `json:"has_more"`
	// Cursor fetches the next page; nil on the last one.
	Cursor *string `json:"cursor"`
}

// ListFiles returns one page of up to limit files (1 to 1000; 0: the
// gateway's default), starting at cursor ("" for the first page).
func (c *Client) ListFiles(ctx context.Context, limit int, cursor string, opts ...FileOption) (*FilePage, error) {
	q := fileQuery(opts)
	if limit > 0 {
		q.Set("limit", strconv.Itoa(limit))
	}
	if cursor != "" {
		q.Set("cursor", cursor)
	}
	return get[FilePage](ctx, c, "/files", q)
}

// FilePages yields the pages of a workspace's files, newest first, limit
// files a page. It stops at the first error, which it yields. A file that
// exists for the whole walk is yielded once, whatever is uploaded or
// deleted meanwhile.
func (c *Client) FilePages(ctx context.Context, limit int, opts ...FileOption) iter.Seq2[*FilePage, error] {
	return pages("", func(cursor string) (*FilePage, string, bool, error) {
		p, err := c.ListFiles(ctx, limit, cursor, opts...)
		if err != nil {
			return nil, "", false, err
		}
		if p.Cursor == nil || *p.Cursor == "" {
			return p, "", false, nil
		}
		return p, *p.Cursor, true, nil
	})
}

// Files yields every file of a workspace, newest first (see FilePages).
func (c *Client) Files(ctx context.Context, opts ...FileOption) iter.Seq2[File, error] {
	return items(c.FilePages(ctx, 0, opts...), func(p *FilePage) []File { return p.Files })
}

// ByteRange is a range of a file's bytes, both ends included; End < 0
// means to the end of the file.
type ByteRange struct {
	Start, End int64
}

func (r ByteRange) header() string {
	if r.End < 0 {
		return fmt.Sprintf("bytes=%d-", r.Start)
	}
	return fmt.Sprintf("bytes=%d-%d", r.Start, r.End)
}

// Content is a file's bytes as they arrive. The caller must Close it.
type Content struct {
	io.ReadCloser
	// ContentType is the file's mime_type.
	ContentType string
	// Length is the number of bytes of this answer (of the range, for
	// one), -1 if not told.
	Length int64
	// ETag is the file's strong validator.
	ETag string
	// Filename is the file's name, from Content-Disposition.
	Filename string
	// Partial is true for a range; Start and Total then say where it lies
	// in a file of Total bytes.
	Partial      bool
	Start, Total int64
}

// FileContent streams a file's bytes: all of them when rng is nil, else
// that range (a 416 *Error when it lies outside the file). Reading takes
// as long as the bytes take to arrive; bound it with ctx. Files are not
// downloadable with ordinary keys unless the deployment allows it (400);
// service keys may always read the files of their user's workspaces.
func (c *Client) FileContent(ctx context.Context, id string, rng *ByteRange, opts ...FileOption) (*Content, error) {
	h := http.Header{}
	if rng != nil {
		h.Set("Range", rng.header())
	}
	resp, err := c.send(ctx, request{method: http.MethodGet, path: filePath(id) + "/content", query: fileQuery(opts), header: h, idempotent: true})
	if err != nil {
		return nil, err
	}
	ct := &Content{ReadCloser: resp.Body, ContentType: resp.Header.Get("Content-Type"), Length: resp.ContentLength, ETag: resp.Header.Get("ETag")}
	if _, params, err := mime.ParseMediaType(resp.Header.Get("Content-Disposition")); err == nil {
		ct.Filename = params["filename"] // mime decodes filename* (RFC 5987)
	}
	if resp.StatusCode == http.StatusPartialContent {
		ct.Partial = true
		if ct.Start, ct.Total, err = parseContentRange(resp.Header.Get("Content-Range")); err != nil {
			resp.Body.Close()
			return nil, err
		}
	}
	return ct, nil
}

// parseContentRange reads "bytes first-last/total".
func parseContentRange(v string) (start, total int64, err error) {
	spec, ok := strings.CutPrefix(v, "bytes ")
	rng, size, ok2 := strings.Cut(spec, "/")
	first, _, ok3 := strings.Cut(rng, "-")
	if !ok || !ok2 || !ok3 {
		return 0, 0, fmt.Errorf("client: malformed Content-Range %q", v)
	}
	if start, err = strconv.ParseInt(first, 10, 64); err != nil {
		return 0, 0, fmt.Errorf("client: malformed Content-Range %q", v)
	}
	total = -1
	if size != "*" {
		if total, err = strconv.ParseInt(size, 10, 64); err != nil {
			return 0, 0, fmt.Errorf("client: malformed Content-Range %q", v)
		}
	}
	return start, total, nil
}

// errNoContent guards Upload against a nil reader.
var errNoContent = errors.New("client: Upload.Content is nil")
