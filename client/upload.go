package client

import (
	"context"
	"errors"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"net/textproto"
)

// UnknownSize is the Size of an upload whose length is not known ahead: the
// body is then sent chunked.
const UnknownSize = -1

// Upload is a file to store.
type Upload struct {
	// Filename is the name the file is stored under.
	Filename string
	// Content is read once, as the request is sent; nothing of it is kept
	// in memory beyond a copy buffer.
	Content io.Reader
	// Size is the number of bytes Content holds, or UnknownSize. A known
	// size lets the gateway refuse a file over its limit before a byte is
	// sent; Content holding more or fewer bytes fails the upload.
	Size int64
	// Purpose is the OpenAI-style purpose stored with the file
	// (assistants, batch, fine-tune, vision, user_data, evals); "" is
	// user_data.
	Purpose string
	// ContentType is the part's type; the gateway decides the stored
	// mime_type from the bytes. "" sends application/octet-stream.
	ContentType string
}

// ErrSizeMismatch: Upload.Content did not hold Upload.Size bytes.
var ErrSizeMismatch = errors.New("client: upload content does not match its size")

// UploadFile stores a file in the key's workspace (or where opts say),
// streaming Content through a pipe into the multipart body as the
// connection takes it. It is never retried, since Content cannot be read
// twice: a 429 or 503 comes back as *Error with RetryAfter for the caller
// to decide. It returns once Content is no longer being read.
func (c *Client) UploadFile(ctx context.Context, u Upload, opts ...FileOption) (*File, error) {
	if u.Content == nil {
		return nil, errNoContent
	}
	if u.Size < UnknownSize {
		return nil, fmt.Errorf("client: upload size %d", u.Size)
	}
	boundary := multipart.NewWriter(nil).Boundary()
	length := int64(UnknownSize)
	if u.Size >= 0 {
		// The framing is written by the same code with the same boundary
		// into a counter, so the declared length is exact.
		var n countWriter
		if err := writeForm(&n, boundary, u, nil); err != nil {
			return nil, err
		}
		length = int64(n) + u.Size
	}

	done := make(chan error, 1)
	var pr *io.PipeReader
	body := func() (io.Reader, int64, error) {
		var pw *io.PipeWriter
		pr, pw = io.Pipe()
		go func() {
			err := writeForm(pw, boundary, u, u.Content)
			pw.CloseWithError(err) // nil: EOF for the transport
			done <- err
		}()
		return pr, length, nil
	}
	h := http.Header{"Content-Type": {"multipart/form-data; boundary=" + boundary}}
	r := request{method: http.MethodPost, path: "/files", query: fileQuery(opts), header: h, body: body}
	resp, err := c.send(ctx, r)
	if pr != nil {
		// The transport may stop reading early (the gateway refused the
		// file before its end); stop the writer and wait for it, so
		// Content is not read after this returns.
		pr.CloseWithError(errUploadEnded)
		if werr := <-done; err != nil && errors.Is(werr, ErrSizeMismatch) {
			err = errors.Join(werr, err)
		}
	}
	if err != nil {
		return nil, err
	}
	var f File
	if err := decode(r, resp, &f); err != nil {
		return nil, err
	}
	return &f, nil
}

// errUploadEnded stops the form writer once the request is over.
var errUploadEnded = errors.New("client: upload request ended")

// writeForm writes the multipart body: the purpose field, then the file
// part with content (u.Size bytes of it when known), then the closing
// boundary. With a nil content it writes the framing only (to measure it).
func writeForm(w io.Writer, boundary string, u Upload, content io.Reader) error {
	mw := multipart.NewWriter(w)
	if err := mw.SetBoundary(boundary); err != nil {
		return err
	}
	if u.Purpose != "" {
		if err := mw.WriteField("purpose", u.Purpose); err != nil {
			return err
		}
	}
	ct := u.ContentType
	if ct == "" {
		ct = "application/octet-stream"
	}
	part, err := mw.CreatePart(textproto.MIMEHeader{
		"Content-Disposition": {multipart.FileContentDisposition("file", u.Filename)},
		"Content-Type":        {ct},
	})
	if err != nil {
		return err
	}
	if content != nil {
		if u.Size >= 0 {
			n, err := io.CopyN(part, content, u.Size)
			if errors.Is(err, io.EOF) {
				return fmt.Errorf("%w: %d bytes, Size %d", ErrSizeMismatch, n, u.Size)
			}
			if err != nil {
				return err
			}
			// A byte past the size means a longer content: the form is
			// left unclosed, so the gateway never takes it for whole.
			var probe [1]byte
			if m, _ := io.ReadFull(content, probe[:]); m > 0 {
				return fmt.Errorf("%w: more than Size %d bytes", ErrSizeMismatch, u.Size)
			}
		} else if _, err := io.Copy(part, content); err != nil {
			return err
		}
	}
	return mw.Close()
}

// countWriter counts what is written to it.
type countWriter int64

func (c *countWriter) Write(p []byte) (int, error) {
	*c += countWriter(len(p))
	return len(p), nil
}
