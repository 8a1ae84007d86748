package providers

import (
	"bytes"
	"io"
	"mime/multipart"
	"net/textproto"
	"sync"

	"github.com/aigateway/gateway/files/blob"
)

// formBody is the request body of an upload to a provider: a
// multipart/form-data form of fields and one file part, whose bytes are
// read from the caller's reader while the transport sends them. The
// transport reads it on its own goroutine, in pieces of copyBufferBytes
// (see WriteTo); no goroutine of ours and no pipe stand in between, so a
// piece costs one read loop and one chunk on the wire, not a hand-off.
//
// The transport may go on reading a body after RoundTrip has returned (an
// answer that came before the body was sent, a connection that broke), so
// the caller calls finish once it has the answer: from then on the file is
// not read any more, and its reader belongs to the caller again.
type formBody struct {
	head  []byte // the fields and the file part's header
	tail  []byte // the closing boundary
	ctype string

	mu       sync.Mutex // held while the file is read; finish takes it
	file     *blob.Body // nil once it has ended
	fileErr  error      // the file's own failure, which is the upload's cause
	finished bool
}

// newFormBody lays out the form: fields in order, then a part with
// partHeader holding file's bytes.
func newFormBody(fields [][2]string, partHeader textproto.MIMEHeader, file io.Reader) (*formBody, error) {
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	for _, kv := range fields {
		if err := mw.WriteField(kv[0], kv[1]); err != nil {
			return nil, err
		}
	}
	if _, err := mw.CreatePart(partHeader); err != nil {
		return nil, err
	}
	headLen := buf.Len()
	if err := mw.Close(); err != nil {
		return nil, err
	}
	form := buf.Bytes()
	return &formBody{head: form[:headLen], tail: form[headLen:], ctype: mw.FormDataContentType(),
		file: blob.NewBody(file, -1)}, nil
}

// ContentType is the form's Content-Type, with its boundary.
func (b *formBody) ContentType() string { return b.ctype }

// Read gives the head, then the file's bytes, as many as fit in p (a part
// of a multipart request gives a few KiB a read: each Read of the
// transport's is one chunk on the wire, so p is filled), then the tail.
// Once finish has been called it fails with errUploadFinished, which
// aborts the request.
func (b *formBody) Read(p []byte) (int, error) {
	if len(b.head) > 0 {
		n := copy(p, b.head)
		b.head = b.head[n:]
		return n, nil
	}
	if n, more, err := b.readFile(p); more {
		return n, err
	}
	if len(b.tail) > 0 {
		n := copy(p, b.tail)
		b.tail = b.tail[n:]
		return n, nil
	}
	return 0, io.EOF
}

// readFile fills p from the file; more is false once the file has ended
// and nothing was read.
func (b *formBody) readFile(p []byte) (n int, more bool, err error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.finished {
		return 0, true, errUploadFinished
	}
	if b.file == nil {
		return 0, false, nil
	}
	n, err = b.file.Fill(p)
	switch {
	case err == io.EOF:
		b.file = nil
		return n, n > 0, nil
	case err != nil:
		b.fileErr = err
	}
	return n, true, err
}

// WriteTo hands the form to w in pieces of copyBufferBytes: the transport
// copies a body that has it through it, rather than through its own 32 KiB
// buffer, so each chunk on the wire is one such piece.
func (b *formBody) WriteTo(w io.Writer) (int64, error) {
	buf := make([]byte, copyBufferBytes)
	var total int64
	for {
		n, err := b.Read(buf)
		if n > 0 {
			m, werr := w.Write(buf[:n])
			total += int64(m)
			if werr != nil {
				return total, werr
			}
		}
		if err == io.EOF {
			return total, nil
		}
		if err != nil {
			return total, err
		}
	}
}

// Close is the transport's: it says it is done, which finish does not rely
// on (it may come late, from another goroutine).
func (b *formBody) Close() error { return nil }

// finish stops the file from being read, waiting for a read under way,
// and returns the file's own error, if it failed: the upload's cause,
// whatever the transport made of the request it cut short.
func (b *formBody) finish() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.finished = true
	return b.fileErr
}

// abandon stops the file from being read if it has not ended yet, and
// says whether it had not: whether the request is still sending it, and
// cutting it short leaves the provider nothing. A read under way is
// waited for.
func (b *formBody) abandon() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.file == nil && !b.finished {
		return false
	}
	b.finished = true
	return true
}
