// Package sniff decides the type of an upload from its content, as the bytes
// stream past: it accepts only the file types the gateway stores (PDF, PNG,
// JPEG, GIF, WebP, DOCX/XLSX/PPTX, MP3, WAV, FLAC, Ogg audio and UTF-8 text)
// and refuses the rest with a reason safe to show the client. It holds one
// window of the stream in memory, whatever the upload's size, and uses the
// standard library only.
package sniff

import (
	"bytes"
	"errors"
	"fmt"
	"io"

	"github.com/aigateway/gateway/internal/invalid"
)

// The mime types an upload may have. Nothing else is stored.
const (
	MimePDF      = "application/pdf"
	MimePNG      = "image/png"
	MimeJPEG     = "image/jpeg"
	MimeGIF      = "image/gif"
	MimeWebP     = "image/webp"
	MimeDOCX     = "application/vnd.openxmlformats-officedocument.wordprocessingml.document"
	MimeXLSX     = "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"
	MimePPTX     = "application/vnd.openxmlformats-officedocument.presentationml.presentation"
	MimeMP3      = "audio/mpeg"
	MimeWAV      = "audio/wav"
	MimeFLAC     = "audio/flac"
	MimeOGG      = "audio/ogg"
	MimeText     = "text/plain"
	MimeMarkdown = "text/markdown"
	MimeCSV      = "text/csv"
	MimeJSON     = "application/json"
	MimeNDJSON   = "application/x-ndjson"
)

// WindowLen is how many leading bytes NewReader reads to decide the type:
// enough for the first local headers of an OOXML zip (the part names and
// [Content_Types].xml come first in files written by Office) and the BOS
// pages of an Ogg stream. It is the only buffer a Reader holds.
const WindowLen = 64 << 10

// Errors of content sniffing. Both are the client's fault (HTTP 400).
var (
	// ErrUnsupportedType: the content is none of the accepted types, or a
	// text upload turned out not to be text further on. Returned wrapped in
	// *TypeError.
	ErrUnsupportedType = errors.New("unsupported file type")
	// ErrEmptyFile: the stream ended before its first byte.
	ErrEmptyFile = errors.New("empty file")
)

// TypeError says why content was refused. It unwraps to ErrUnsupportedType.
// Its fields never echo the content, so they are safe to show the client.
type TypeError struct {
	// Reason is a fixed text saying what is wrong with the content.
	Reason string
	// Offset is the byte offset in the upload where the content stopped being
	// acceptable text, or -1 when the type was refused as a whole.
	Offset int64
}

func (e *TypeError) Error() string {
	if e.Offset >= 0 {
		return fmt.Sprintf("%v: %s (at byte %d)", ErrUnsupportedType, e.Reason, e.Offset)
	}
	return fmt.Sprintf("%v: %s", ErrUnsupportedType, e.Reason)
}

// Unwrap returns ErrUnsupportedType.
func (e *TypeError) Unwrap() error { return ErrUnsupportedType }

// FieldProblems names the problem under "file".
func (e *TypeError) FieldProblems() []invalid.Field {
	return []invalid.Field{{Name: "file", Problem: e.Reason}}
}

func refused(reason string) error { return &TypeError{Reason: reason, Offset: -1} }

// Reasons shown to clients.
const (
	reasonUnknown    = "content is not one of the accepted file types"
	reasonNotUTF8    = "text is not valid UTF-8"
	reasonControl    = "text contains a NUL or control character"
	reasonTruncated  = "text ends inside a UTF-8 sequence"
	reasonPDF        = "malformed PDF header"
	reasonPNG        = "truncated or malformed PNG header"
	reasonJPEG       = "truncated or malformed JPEG header"
	reasonGIF        = "truncated or malformed GIF header"
	reasonRIFF       = "RIFF container is neither WAVE audio nor WebP image"
	reasonWAV        = "truncated or malformed WAVE header"
	reasonWebP       = "truncated or malformed WebP header"
	reasonFLAC       = "truncated or malformed FLAC header"
	reasonOgg        = "Ogg stream without a supported audio codec"
	reasonMP3        = "ID3 tag not followed by MPEG audio or FLAC"
	reasonZip        = "zip archive is not a DOCX, XLSX or PPTX document"
	reasonOfficeKind = "macro-enabled, template or other non-document Office file"
)

// Reader decides the type of a streamed upload from its content and
// passes the stream through unchanged. The client's declared Content-Type is
// never consulted: it is whatever the client says.
//
// The type is decided from the first WindowLen bytes. Binary types are only
// recognised from their headers; text types are checked on every byte as the
// stream is read, so a text upload that turns binary after the window fails
// on that Read. A Reader is not safe for concurrent use.
type Reader struct {
	r      io.Reader
	mime   string
	replay []byte // the sniffed prefix not yet returned by Read
	eof    bool   // r reached EOF while sniffing; it is not read again
	text   bool
	v      textValidator
	err    error // sticky: the error Read returned, once it returned one
}

// NewReader reads up to WindowLen bytes from r (fewer at EOF) and decides
// the type, using filename (the raw client filename, only its extension is
// looked at) to choose among the text subtypes.
//
// Errors: ErrEmptyFile when r is empty; *TypeError (ErrUnsupportedType) when
// the content is none of the accepted types; any other error from r, wrapped
// so that errors.Is/As still find it (e.g. *http.MaxBytesError, or
// io.ErrUnexpectedEOF from a multipart part whose body was cut off: that is
// not mistaken for the end of a small file).
func NewReader(r io.Reader, filename string) (*Reader, error) {
	buf := make([]byte, WindowLen)
	n, eof, err := fill(r, buf)
	if err != nil {
		return nil, fmt.Errorf("reading the upload: %w", err)
	}
	if n == 0 {
		return nil, ErrEmptyFile
	}
	t := &Reader{r: r, replay: buf[:n], eof: eof}
	mime, family := sniffBinary(t.replay, eof)
	if mime == "" {
		// Not a binary type: text, or nothing we accept. A header that
		// began like a binary type names the better reason for refusing.
		err := t.v.feed(t.replay)
		if err == nil && eof {
			err = t.v.end()
		}
		if err != nil {
			if family != "" {
				return nil, refused(family)
			}
			te := err.(*TypeError)
			te.Reason = reasonUnknown + " (as text: " + te.Reason + ")"
			return nil, te
		}
		t.text = true
		mime = textSubtype(filename, t.replay[:n-t.v.nc], eof)
	}
	t.mime = mime
	return t, nil
}

// fill reads into buf until it is full or r ends. Unlike io.ReadFull it
// tells io.EOF (a short file) from io.ErrUnexpectedEOF returned by r itself
// (a cut-off body).
func fill(r io.Reader, buf []byte) (n int, eof bool, err error) {
	for empty := 0; n < len(buf); {
		m, err := r.Read(buf[n:])
		n += m
		switch {
		case err == io.EOF:
			return n, true, nil
		case err != nil:
			return n, false, err
		case m == 0:
			if empty++; empty >= 100 {
				return n, false, io.ErrNoProgress
			}
		}
	}
	return n, false, nil
}

// MimeType is the decided type, one of the Mime* constants.
func (t *Reader) MimeType() string { return t.mime }

// Text reports whether the content was taken for text: its every byte is
// checked as it is read, so only reading it to the end accepts it whole.
func (t *Reader) Text() bool { return t.text }

// Err returns the error that ended the stream, other than io.EOF: a
// *TypeError found while streaming text, or the source's own error; nil
// while the stream is fine. A storage SDK or HTTP client reading the
// Reader may wrap or replace the error Read gave it, so a caller that
// must know why an upload failed (400 for bad content, 413 for size, not a
// 5xx for storage) can ask here.
func (t *Reader) Err() error {
	if t.err == io.EOF {
		return nil
	}
	return t.err
}

// Read replays the sniffed prefix, then reads the rest of the stream. For
// text types it returns a *TypeError (ErrUnsupportedType) as soon as the
// content is not valid UTF-8 or holds a control character; n then counts
// the bytes before the offending sequence (whose first bytes an earlier Read
// may have returned, when the sequence was cut between two reads). Once Read
// has returned an error it returns the same error again.
func (t *Reader) Read(p []byte) (int, error) {
	if t.err != nil {
		return 0, t.err
	}
	if len(t.replay) > 0 {
		n := copy(p, t.replay)
		t.replay = t.replay[n:]
		if len(t.replay) == 0 {
			t.replay = nil // let the sniff buffer go
		}
		return n, nil
	}
	if t.eof {
		t.err = io.EOF
		return 0, io.EOF
	}
	n, err := t.r.Read(p)
	if t.text {
		if verr := t.v.feed(p[:n]); verr != nil {
			t.err = verr
			// Hand over the good bytes before the bad rune, which may
			// have begun in an earlier Read.
			good := verr.(*TypeError).Offset - (t.v.off - int64(n))
			return int(max(good, 0)), verr
		}
		if err == io.EOF {
			if verr := t.v.end(); verr != nil {
				t.err = verr
				return n, verr
			}
		}
	}
	if err != nil {
		t.err = err
	}
	return n, err
}

// sniffBinary recognises the binary types from their headers. It returns
// the mime type, or "" and, when b began like one of them without being a
// valid one, the reason to give if b is not text either ("%PDF-x" or "PK"
// may just as well start a text file). eof says b is the whole file.
func sniffBinary(b []byte, eof bool) (mime, family string) {
	switch {
	case bytes.HasPrefix(b, []byte("%PDF-")):
		return sniffPDF(b)
	case bytes.HasPrefix(b, []byte("\x89PNG")):
		return sniffPNG(b)
	case bytes.HasPrefix(b, []byte("\xff\xd8")):
		return sniffJPEG(b)
	case bytes.HasPrefix(b, []byte("GIF8")):
		return sniffGIF(b)
	case bytes.HasPrefix(b, []byte("RIFF")):
		return sniffRIFF(b)
	case bytes.HasPrefix(b, []byte("fLaC")):
		if validFLAC(b) {
			return MimeFLAC, ""
		}
		return "", reasonFLAC
	case bytes.HasPrefix(b, []byte("OggS")):
		if oggAudio(b) {
			return MimeOGG, ""
		}
		return "", reasonOgg
	case bytes.HasPrefix(b, []byte("PK\x03\x04")):
		return sniffOOXML(b)
	case bytes.HasPrefix(b, []byte("PK\x05\x06")), bytes.HasPrefix(b, []byte("PK\x07\x08")):
		return "", reasonZip // an empty or a spanned archive
	case bytes.HasPrefix(b, []byte("ID3")):
		if end, ok := id3End(b, 0); ok {
			return sniffAfterID3(b, end, eof)
		}
	case mpegStreamAt(b, 0, eof):
		return MimeMP3, ""
	}
	return "", ""
}
