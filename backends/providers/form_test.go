package providers

import (
	"bytes"
	"errors"
	"io"
	"mime"
	"mime/multipart"
	"net/textproto"
	"strings"
	"testing"
	"testing/iotest"
)

func fileHeader() textproto.MIMEHeader {
	h := make(textproto.MIMEHeader)
	h.Set("Content-Disposition", `form-data; name="file"; filename="a.bin"`)
	h.Set("Content-Type", "application/octet-stream")
	return h
}

// readForm parses body as a multipart form of its content type.
func readForm(t *testing.T, ctype string, body []byte) (fields map[string]string, file []byte) {
	t.Helper()
	_, params, err := mime.ParseMediaType(ctype)
	if err != nil {
		t.Fatal(err)
	}
	mr := multipart.NewReader(bytes.NewReader(body), params["boundary"])
	fields = map[string]string{}
	for {
		p, err := mr.NextPart()
		if err == io.EOF {
			return fields, file
		}
		if err != nil {
			t.Fatalf("the form does not parse: %v", err)
		}
		b, err := io.ReadAll(p)
		if err != nil {
			t.Fatal(err)
		}
		if p.FormName() == "file" {
			file = b
		} else {
			fields[p.FormName()] = string(b)
		}
	}
}

// chunks records the size of every write.
type chunks struct {
	bytes.Buffer
	sizes []int
}

func (c *chunks) Write(p []byte) (int, error) {
	c.sizes = append(c.sizes, len(p))
	return c.Buffer.Write(p)
}

func TestFormBodyWritesWholeFormInFullPieces(t *testing.T) {
	content := bytes.Repeat([]byte("0123456789abcdef"), (3*copyBufferBytes+100)/16)
	// A part gives a few KiB a read, as mime/multipart's does.
	b, err := newFormBody([][2]string{{"purpose", "batch"}}, fileHeader(), iotest.HalfReader(bytes.NewReader(content)))
	if err != nil {
		t.Fatal(err)
	}
	var w chunks
	if _, err := io.Copy(&w, b); err != nil {
		t.Fatal(err)
	}
	fields, file := readForm(t, b.ContentType(), w.Bytes())
	if fields["purpose"] != "batch" || !bytes.Equal(file, content) {
		t.Fatalf("fields %v, file of %d bytes; want purpose=batch and the %d bytes sent", fields, len(file), len(content))
	}
	// The head, full pieces of the file, its rest, the tail.
	if len(w.sizes) != 6 || w.sizes[1] != copyBufferBytes || w.sizes[2] != copyBufferBytes || w.sizes[3] != copyBufferBytes {
		t.Fatalf("writes of %v bytes, want the file in pieces of %d", w.sizes, copyBufferBytes)
	}
	if err := b.finish(); err != nil {
		t.Fatalf("finish after a whole file: %v", err)
	}
}

func TestFormBodyReadAlsoGivesTheWholeForm(t *testing.T) {
	content := strings.Repeat("x", 10_000)
	b, err := newFormBody(nil, fileHeader(), iotest.OneByteReader(strings.NewReader(content)))
	if err != nil {
		t.Fatal(err)
	}
	// Read alone, as a transport hiding WriteTo (a tracing wrapper) does.
	all, err := io.ReadAll(struct{ io.Reader }{b})
	if err != nil {
		t.Fatal(err)
	}
	if _, file := readForm(t, b.ContentType(), all); string(file) != content {
		t.Fatalf("file of %d bytes, want %d", len(file), len(content))
	}
}

func TestFormBodyKeepsTheFilesOwnError(t *testing.T) {
	cause := errors.New("client gone")
	b, err := newFormBody(nil, fileHeader(), io.MultiReader(strings.NewReader("some bytes"), iotest.ErrReader(cause)))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(io.Discard, b); !errors.Is(err, cause) {
		t.Fatalf("copy: %v, want the file's error", err)
	}
	if err := b.finish(); !errors.Is(err, cause) {
		t.Fatalf("finish: %v, want the file's error", err)
	}
}

// countingFile counts the reads made of it.
type countingFile struct {
	reads int
}

func (f *countingFile) Read(p []byte) (int, error) {
	f.reads++
	return copy(p, "abc"), nil
}

func TestFormBodyIsNotReadOnceFinished(t *testing.T) {
	f := &countingFile{}
	b, err := newFormBody(nil, fileHeader(), f)
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 4096)
	if _, err := b.Read(buf); err != nil { // the head
		t.Fatal(err)
	}
	if _, err := b.Read(buf); err != nil || f.reads == 0 {
		t.Fatalf("reading the file: %v after %d reads", err, f.reads)
	}
	if err := b.finish(); err != nil {
		t.Fatalf("finish: %v; the file did not fail", err)
	}
	reads := f.reads
	if n, err := b.Read(buf); n != 0 || !errors.Is(err, errUploadFinished) {
		t.Fatalf("Read after finish: %d, %v; want errUploadFinished", n, err)
	}
	if f.reads != reads {
		t.Fatalf("the file was read %d times after finish", f.reads-reads)
	}
}
