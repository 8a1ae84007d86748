// Package sniff decides the type of an upload from its content, as the bytes
// stream past: it accepts only the file types the gateway stores (PDF, PNG,
// JPEG, GIF, WebP, DOCX/XLSX/PPTX, MP3, WAV, FLAC, Ogg audio and UTF-8 text)
// and refuses the rest with a reason safe to show the client. It holds one
// window of the stream in memory, whatever the upload's size, and uses the
// standard library only.
package sniff

import (
	"bytes"
	"compress/flate"
	"encoding/binary"
	"encoding/json"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"math/bits"
	"path"
	"strings"
	"unicode/utf8"

	"github.com/aigateway/gateway/invalid"
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

// TypeError says why content was refused. It unwraps to ErrUnsupportedType;
// Reason is a fixed text and Metadata never echoes the content, so both are
// safe to show the client.
type TypeError struct {
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

// Metadata adds, for text, the offset of the first byte at fault.
func (e *TypeError) Metadata() map[string]any {
	if e.Offset < 0 {
		return nil
	}
	return map[string]any{"offset": e.Offset}
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
		// "%PDF-1.7": the version must follow.
		if len(b) >= 8 && isDigit(b[5]) && b[6] == '.' && isDigit(b[7]) {
			return MimePDF, ""
		}
		return "", reasonPDF
	case bytes.HasPrefix(b, []byte("\x89PNG")):
		// The signature, then the IHDR chunk, which must come first.
		if bytes.HasPrefix(b, []byte("\x89PNG\r\n\x1a\n\x00\x00\x00\x0dIHDR")) {
			return MimePNG, ""
		}
		return "", reasonPNG
	case bytes.HasPrefix(b, []byte("\xff\xd8")):
		// SOI, then the first marker (APPn, DQT, SOFn, ...).
		if len(b) >= 4 && b[2] == 0xff && b[3] >= 0xc0 && b[3] < 0xff {
			return MimeJPEG, ""
		}
		return "", reasonJPEG
	case bytes.HasPrefix(b, []byte("GIF8")):
		// Header and the 7-byte logical screen descriptor.
		if (bytes.HasPrefix(b, []byte("GIF87a")) || bytes.HasPrefix(b, []byte("GIF89a"))) && len(b) >= 13 {
			return MimeGIF, ""
		}
		return "", reasonGIF
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

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

// sniffRIFF tells WAVE from WebP. Both need the first chunk's header after
// the form type.
func sniffRIFF(b []byte) (mime, family string) {
	if len(b) < 12 {
		return "", reasonRIFF
	}
	switch string(b[8:12]) {
	case "WAVE":
		// Usually "fmt ", though "JUNK", "bext", "LIST" may come first.
		if len(b) >= 20 && isFourCC(b[12:16]) {
			return MimeWAV, ""
		}
		return "", reasonWAV
	case "WEBP":
		if len(b) >= 20 {
			switch string(b[12:16]) {
			case "VP8 ", "VP8L", "VP8X":
				return MimeWebP, ""
			}
		}
		return "", reasonWebP
	}
	return "", reasonRIFF
}

func isFourCC(b []byte) bool {
	for _, c := range b {
		if c < 0x20 || c > 0x7e {
			return false
		}
	}
	return true
}

// validFLAC checks that the first metadata block is a STREAMINFO block of
// its fixed 34 bytes, as the format requires.
func validFLAC(b []byte) bool {
	return len(b) >= 8 && b[4]&0x7f == 0 && b[5] == 0 && b[6] == 0 && b[7] == 34
}

// id3End parses the ID3v2 header at b[at:] and returns the offset just past
// the tag (which may lie beyond b).
func id3End(b []byte, at int) (int, bool) {
	h := b[at:]
	if len(h) < 10 || string(h[:3]) != "ID3" || h[3] < 2 || h[3] > 4 || h[4] == 0xff {
		return 0, false
	}
	size := 0
	for _, c := range h[6:10] { // four 7-bit "syncsafe" bytes
		if c&0x80 != 0 {
			return 0, false
		}
		size = size<<7 | int(c)
	}
	end := at + 10 + size
	if h[5]&0x10 != 0 { // footer present (v2.4)
		end += 10
	}
	return end, true
}

// sniffAfterID3 looks at what an ID3v2 tag (or several) precedes: MPEG audio
// is what the tag is for, though FLAC files carry one too. A tag larger than
// the window hides what follows; the tag itself is then the evidence.
func sniffAfterID3(b []byte, end int, eof bool) (mime, family string) {
	for end < len(b) {
		next, ok := id3End(b, end)
		if !ok {
			break
		}
		end = next
	}
	if end >= len(b) {
		return MimeMP3, ""
	}
	rest := b[end:]
	if bytes.HasPrefix(rest, []byte("fLaC")) {
		if validFLAC(rest) {
			return MimeFLAC, ""
		}
		return "", reasonFLAC
	}
	// Taggers leave padding or junk before the first frame; decoders scan
	// for the sync, and so do we, within the window.
	for i := end; i+4 <= len(b); i++ {
		if b[i] == 0xff && mpegStreamAt(b, i, eof) {
			return MimeMP3, ""
		}
	}
	if len(b)-end < 4 {
		return MimeMP3, "" // the file ends right after the tag
	}
	return "", reasonMP3
}

// MPEG audio frame header tables (ISO 11172-3, 13818-3, and "MPEG 2.5").
var (
	mpegBitrates = [2][3][15]int{ // [MPEG-1, MPEG-2/2.5][layer I, II, III][index] kbit/s
		{
			{0, 32, 64, 96, 128, 160, 192, 224, 256, 288, 320, 352, 384, 416, 448},
			{0, 32, 48, 56, 64, 80, 96, 112, 128, 160, 192, 224, 256, 320, 384},
			{0, 32, 40, 48, 56, 64, 80, 96, 112, 128, 160, 192, 224, 256, 320},
		},
		{
			{0, 32, 48, 56, 64, 80, 96, 112, 128, 144, 160, 176, 192, 224, 256},
			{0, 8, 16, 24, 32, 40, 48, 56, 64, 80, 96, 112, 128, 144, 160},
			{0, 8, 16, 24, 32, 40, 48, 56, 64, 80, 96, 112, 128, 144, 160},
		},
	}
	mpegRates = [4][3]int{ // [version bits][index] Hz; version 1 is reserved
		{11025, 12000, 8000}, {}, {22050, 24000, 16000}, {44100, 48000, 32000},
	}
)

// mpegHeader decodes the frame header at h and returns the frame's length
// (0 for free-format bitrates) and the bits that stay the same from frame to
// frame of one stream.
func mpegHeader(h []byte) (length int, stream byte, ok bool) {
	if len(h) < 4 || h[0] != 0xff || h[1]&0xe0 != 0xe0 {
		return 0, 0, false
	}
	version := h[1] >> 3 & 3 // 0: 2.5, 1: reserved, 2: MPEG-2, 3: MPEG-1
	layer := h[1] >> 1 & 3   // 0: reserved (ADTS AAC uses it), 1: III, 2: II, 3: I
	bitrate := h[2] >> 4
	rate := h[2] >> 2 & 3
	padding := int(h[2] >> 1 & 1)
	if version == 1 || layer == 0 || bitrate == 15 || rate == 3 || h[3]&3 == 2 {
		return 0, 0, false
	}
	stream = h[1]&0x1e | rate // version, layer, sampling rate
	if bitrate == 0 {
		return 0, stream, true
	}
	v := 1
	if version == 3 {
		v = 0
	}
	kbps := mpegBitrates[v][3-layer][bitrate]
	hz := mpegRates[version][rate]
	switch {
	case layer == 3: // layer I: 4-byte slots
		length = (12*kbps*1000/hz + padding) * 4
	case layer == 1 && version != 3: // layer III of MPEG-2/2.5: half the samples
		length = 72*kbps*1000/hz + padding
	default:
		length = 144*kbps*1000/hz + padding
	}
	return length, stream, true
}

// minMPEGFrames is how many frame headers in step make an MPEG audio
// stream. Two bytes of sync (0xFFEx) are easy to meet by chance: an ELF
// header, UTF-16 text behind its FF FE byte order mark. Three frames whose
// lengths lead from one header to the next are not.
const minMPEGFrames = 3

// mpegStreamAt reports whether MPEG audio starts at b[at:]: minMPEGFrames
// frames of one stream, each header where the previous frame's length says,
// or, in a file shorter than that (eof: b is the whole file), whole frames to
// its end (an ID3v1 "TAG" trailer allowed). Free-format frames (bitrate
// index 0) cannot be followed without decoding, so they are refused.
func mpegStreamAt(b []byte, at int, eof bool) bool {
	length, stream, ok := mpegHeader(b[at:])
	if !ok || length == 0 {
		return false
	}
	pos := at
	for frames := 1; ; frames++ {
		pos += length
		switch {
		case frames >= minMPEGFrames:
			return true
		case pos > len(b):
			// The frame runs past what we have: at the end of the file
			// it is cut short, which is fine only after a whole one.
			return !eof || frames > 1
		case len(b)-pos < 4:
			// Whole frames up to the end of the file (or of the window,
			// which holds more frames than minMPEGFrames of any size
			// unless the stream starts deep into it, after a tag).
			return true
		case eof && bytes.HasPrefix(b[pos:], []byte("TAG")):
			return true
		}
		next, s, ok := mpegHeader(b[pos:])
		if !ok || next == 0 || s != stream {
			return false
		}
		length = next
	}
}

// Codec identification packets that open an Ogg logical stream.
var (
	oggAudioCodecs = []string{"\x01vorbis", "OpusHead", "\x7fFLAC", "Speex   "}
	oggSkeleton    = "fishead\x00"
)

// oggAudio walks the beginning-of-stream pages (they all come first) and
// accepts the stream when at least one carries an audio codec and none
// carries anything else (video, or a codec we cannot name): audio/ogg must
// not label an Ogg video.
func oggAudio(b []byte) bool {
	audio := false
	for off := 0; ; {
		p := b[off:]
		if len(p) < 27 || string(p[:4]) != "OggS" || p[4] != 0 {
			break
		}
		if p[5]&0x02 == 0 { // not a BOS page: the headers are over
			break
		}
		segs := int(p[26])
		if len(p) < 27+segs {
			return false
		}
		body := 0
		for _, s := range p[27 : 27+segs] {
			body += int(s)
		}
		payload := p[27+segs:]
		id := ""
		if len(payload) >= 8 {
			id = string(payload[:8])
		} else {
			return false
		}
		switch {
		case strings.HasPrefix(id, oggSkeleton):
		case hasAnyPrefix(id, oggAudioCodecs):
			audio = true
		default:
			return false
		}
		off += 27 + segs + body
		if off >= len(b) {
			break
		}
	}
	return audio
}

func hasAnyPrefix(s string, prefixes []string) bool {
	for _, p := range prefixes {
		if strings.HasPrefix(s, p) {
			return true
		}
	}
	return false
}

// textSubtype picks the text type from the filename's extension when the
// sniffed (already validated) window agrees with it, else text/plain.
// b excludes a rune cut by the window's end; eof says b is the whole file.
func textSubtype(filename string, b []byte, eof bool) string {
	b = bytes.TrimPrefix(b, []byte("\xef\xbb\xbf"))
	switch strings.ToLower(path.Ext(filename)) {
	case ".md", ".markdown":
		return MimeMarkdown
	case ".csv":
		return MimeCSV
	case ".json":
		if t := bytes.TrimLeft(b, jsonSpace); len(t) > 0 && (t[0] == '{' || t[0] == '[') && oneJSONValue(t, eof) {
			return MimeJSON
		}
	case ".jsonl", ".ndjson":
		line, _, found := bytes.Cut(b, []byte("\n"))
		if oneJSONValue(line, eof || found) {
			return MimeNDJSON
		}
	}
	return MimeText
}

const jsonSpace = " \t\r\n"

// oneJSONValue reports whether b holds exactly one JSON value, surrounded
// only by whitespace; when complete is false b may stop inside that value,
// as long as what is there is a valid beginning of one.
func oneJSONValue(b []byte, complete bool) bool {
	if len(bytes.Trim(b, jsonSpace)) == 0 {
		return false
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	err := dec.Decode(new(skipJSON))
	switch {
	case err == nil:
		return len(bytes.Trim(b[dec.InputOffset():], jsonSpace)) == 0
	case errors.Is(err, io.ErrUnexpectedEOF):
		return !complete
	}
	return false
}

// skipJSON lets the decoder check syntax without building a value.
type skipJSON struct{}

func (skipJSON) UnmarshalJSON([]byte) error { return nil }

// textOK marks the ASCII bytes text may contain: printable characters and
// \t \n \f \r. NUL, other C0 controls and DEL mark binary content.
var textOK = func() (t [utf8.RuneSelf]bool) {
	for c := 0x20; c < 0x7f; c++ {
		t[c] = true
	}
	for _, c := range "\t\n\f\r" {
		t[c] = true
	}
	return t
}()

// textValidator checks a stream of UTF-8 text fed in arbitrary pieces: a
// rune cut between two pieces is carried over, not misjudged.
type textValidator struct {
	carry [utf8.UTFMax]byte // the start of a rune cut at the end of the last piece
	nc    int
	off   int64 // stream offset just past the bytes fed so far
}

// feed validates p and returns a *TypeError whose Offset is the stream
// offset of the first unacceptable rune.
//
// Text is checked in two fast passes over each piece, utf8.Valid and a scan
// for control characters eight bytes at a time; only a piece that fails
// either is walked rune by rune to find where.
func (v *textValidator) feed(p []byte) error {
	start := v.off
	v.off += int64(len(p))
	i := 0
	if v.nc > 0 {
		// Complete the rune begun in the last piece.
		var r [utf8.UTFMax]byte
		n := copy(r[:], v.carry[:v.nc])
		k := copy(r[n:], p)
		if !utf8.FullRune(r[:n+k]) {
			v.carry, v.nc = r, n+k
			return nil
		}
		size, bad := checkRune(r[:n+k])
		if bad != "" {
			return &TypeError{Reason: bad, Offset: start - int64(v.nc)}
		}
		i, v.nc = size-v.nc, 0
	}
	body := p[i:]
	// Hold back a rune cut by the end of the piece: its first byte is among
	// the last three, and what is there is not a full rune yet.
	cut := len(body)
	for j := len(body) - 1; j >= 0 && j > len(body)-utf8.UTFMax; j-- {
		if utf8.RuneStart(body[j]) {
			if !utf8.FullRune(body[j:]) {
				cut = j
			}
			break
		}
	}
	if !utf8.Valid(body[:cut]) {
		return slowCheck(body[:cut], start+int64(i))
	}
	if c := controlIndex(body[:cut]); c >= 0 {
		return &TypeError{Reason: reasonControl, Offset: start + int64(i+c)}
	}
	v.nc = copy(v.carry[:], body[cut:])
	return nil
}

// slowCheck walks b, full runes only, and reports the first unacceptable
// one at its offset from start.
func slowCheck(b []byte, start int64) error {
	for i := 0; i < len(b); {
		size, bad := checkRune(b[i:])
		if bad != "" {
			return &TypeError{Reason: bad, Offset: start + int64(i)}
		}
		i += size
	}
	return nil
}

const (
	swarLow  = 0x0101010101010101
	swarHigh = 0x8080808080808080
	swarLow7 = 0x7f7f7f7f7f7f7f7f
)

// zeroBytes returns x with the top bit set in exactly the bytes that are 0
// (no borrow crosses bytes: the additions never overflow one).
func zeroBytes(x uint64) uint64 { return ^((x&swarLow7 + swarLow7) | x | swarLow7) }

// controlIndex returns the index of the first control character in b, which
// must be valid UTF-8, or -1. Controls are the bytes below 0x20 other than
// \t \n \f \r, DEL, and the C1 controls U+0080-U+009F, encoded 0xC2 0x80-0x9F.
// It looks at eight bytes at a time, with exact per-byte masks, so a line
// break costs no more than any other byte; only a word holding 0xC2 (whose
// next byte decides) is looked at byte by byte.
func controlIndex(b []byte) int {
	for i := 0; i < len(b); {
		for ; i+8 <= len(b); i += 8 {
			x := binary.LittleEndian.Uint64(b[i:])
			// Bytes below 0x20: with the top bit forced on, subtracting
			// 0x20 clears it exactly in those (and never borrows).
			low := ^(x | swarHigh - swarLow*0x20) &^ x & swarHigh
			if low != 0 {
				low &^= zeroBytes(x^(swarLow*'\n')) | zeroBytes(x^(swarLow*'\r')) |
					zeroBytes(x^(swarLow*'\t')) | zeroBytes(x^(swarLow*'\f'))
			}
			if zeroBytes(x^(swarLow*0xc2)) != 0 {
				break
			}
			if bad := low | zeroBytes(x^(swarLow*0x7f)); bad != 0 {
				return i + bits.TrailingZeros64(bad)/8
			}
		}
		for end := min(i+8, len(b)); i < end; i++ {
			switch c := b[i]; {
			case c < 0x20 && !textOK[c], c == 0x7f:
				return i
			case c == 0xc2 && i+1 < len(b) && b[i+1] < 0xa0:
				return i
			}
		}
	}
	return -1
}

// checkRune decodes the full rune at the start of b and refuses invalid
// UTF-8 (including surrogates and overlong forms) and C1 controls.
func checkRune(b []byte) (size int, reason string) {
	r, size := utf8.DecodeRune(b)
	switch {
	case r == utf8.RuneError && size == 1:
		return 0, reasonNotUTF8
	case r < 0x20 || 0x7f <= r && r <= 0x9f:
		if r < utf8.RuneSelf && textOK[r] {
			return size, ""
		}
		return 0, reasonControl
	}
	return size, ""
}

// end reports a rune left incomplete by the end of the stream.
func (v *textValidator) end() error {
	if v.nc > 0 {
		return &TypeError{Reason: reasonTruncated, Offset: v.off - int64(v.nc)}
	}
	return nil
}

// OOXML main-part content types, from [Content_Types].xml.
var officeMainTypes = map[string]string{
	"application/vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml":   MimeDOCX,
	"application/vnd.openxmlformats-officedocument.spreadsheetml.sheet.main+xml":         MimeXLSX,
	"application/vnd.openxmlformats-officedocument.presentationml.presentation.main+xml": MimePPTX,
}

// Part-name prefixes of each document kind, for when [Content_Types].xml
// cannot be read from the window.
var officePartPrefixes = map[string]string{"word/": MimeDOCX, "xl/": MimeXLSX, "ppt/": MimePPTX}

const (
	// maxInflate bounds the bytes decompressed while sniffing one zip
	// window, so a highly compressed entry costs bounded CPU.
	maxInflate = 4 << 20
	// maxContentTypes bounds the [Content_Types].xml read (one Override
	// per part: a few hundred bytes per slide or sheet).
	maxContentTypes = 1 << 20
)

// sniffOOXML accepts a zip that is a Word, Excel or PowerPoint document. It
// walks the local file headers in the window (the central directory, at the
// end, is not available to a stream) and decides from [Content_Types].xml,
// the package's own statement of what it is, where the window holds it: that
// tells a .docx from a macro-enabled .docm or a template, which have the same
// part names. Those are refused: we accept documents, not macro carriers.
// Without it, the part names decide.
//
// Headers are followed from entry to entry, never searched for: a plain zip
// that stores a .docx uncompressed must not pass for one. Entries written
// with a data descriptor (sizes after the data) are skipped by inflating
// them, which finds where the compressed data ends.
func sniffOOXML(b []byte) (mime, family string) {
	var (
		z      zipWalker
		byName = map[string]bool{}
		macros bool
		ctMime string
		ctRead bool
	)
	for off := 0; off+30 <= len(b) && string(b[off:off+4]) == "PK\x03\x04"; {
		h := b[off:]
		flags := binary.LittleEndian.Uint16(h[6:])
		method := binary.LittleEndian.Uint16(h[8:])
		csize := binary.LittleEndian.Uint32(h[18:])
		nameLen := int(binary.LittleEndian.Uint16(h[26:]))
		extraLen := int(binary.LittleEndian.Uint16(h[28:]))
		dataOff := off + 30 + nameLen + extraLen
		if dataOff > len(b) {
			break
		}
		if flags&1 != 0 {
			return "", reasonZip // encrypted: not something Office writes
		}
		name := string(h[30 : 30+nameLen])
		sizeKnown := flags&8 == 0 && csize != 0xffffffff // else zip64 or a data descriptor
		data := b[dataOff:]
		if sizeKnown {
			if int64(csize) > int64(len(data)) {
				data = nil // runs past the window
			} else {
				data = data[:csize]
			}
		}

		for prefix, m := range officePartPrefixes {
			if strings.HasPrefix(name, prefix) {
				byName[m] = true
			}
		}
		if strings.HasSuffix(strings.ToLower(name), "vbaproject.bin") {
			macros = true
		}
		if name == "[Content_Types].xml" && data != nil {
			if r := z.open(data, method); r != nil {
				var reason string
				if ctMime, reason = officeKind(r); reason != "" {
					return "", reason
				}
				ctRead = true
			}
		}

		next := -1
		switch {
		case sizeKnown:
			next = dataOff + int(csize)
		case method == 8:
			if n, ok := z.deflatedLen(b[dataOff:]); ok {
				next = skipDescriptor(b, dataOff+n)
			}
		}
		if next < 0 {
			break // cannot tell where the next entry starts
		}
		off = next
	}
	switch {
	case macros:
		return "", reasonOfficeKind
	case ctRead:
		if ctMime == "" {
			return "", reasonZip
		}
		return ctMime, ""
	case len(byName) == 1:
		for m := range byName {
			return m, ""
		}
	}
	return "", reasonZip
}

// officeKind reads [Content_Types].xml and returns the document's mime type
// when it declares exactly one main part of the three accepted kinds, "" when
// it declares none (a package that is not an Office document). It refuses,
// with a reason, a file it cannot read and one that declares something else
// as well: a macro-enabled, template, slideshow or add-in main part, or a
// VBA project. encoding/xml expands no external entities, so the XML cannot
// reach out of the window.
func officeKind(r io.Reader) (mime, reason string) {
	dec := xml.NewDecoder(io.LimitReader(r, maxContentTypes))
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			return mime, ""
		}
		if err != nil {
			return "", reasonZip
		}
		el, isStart := tok.(xml.StartElement)
		if !isStart || (el.Name.Local != "Override" && el.Name.Local != "Default") {
			continue
		}
		for _, a := range el.Attr {
			if a.Name.Local != "ContentType" {
				continue
			}
			ct := strings.ToLower(strings.TrimSpace(a.Value))
			switch m, main := officeMainTypes[ct]; {
			case main && (mime == "" || mime == m):
				mime = m
			case main, strings.HasSuffix(ct, ".main+xml"), ct == "application/vnd.ms-office.vbaproject":
				return "", reasonOfficeKind
			}
		}
	}
}

// zipWalker inflates zip entries in a window, reusing one decompressor and
// sharing the maxInflate budget.
type zipWalker struct {
	fr     io.ReadCloser
	budget int64
	used   bool
}

// open returns the entry's decompressed content, or nil for a method other
// than store and deflate.
func (z *zipWalker) open(data []byte, method uint16) io.Reader {
	switch method {
	case 0:
		return bytes.NewReader(data)
	case 8:
		return z.inflate(bytes.NewReader(data))
	}
	return nil
}

func (z *zipWalker) inflate(r *bytes.Reader) io.Reader {
	if !z.used {
		z.used, z.budget = true, maxInflate
	}
	if z.fr == nil {
		z.fr = flate.NewReader(r)
	} else {
		_ = z.fr.(flate.Resetter).Reset(r, nil) // never fails without a dictionary
	}
	return &budgetReader{r: z.fr, budget: &z.budget}
}

// deflatedLen returns how many bytes of data the deflate stream at its start
// occupies. The decompressor reads a bytes.Reader (an io.ByteReader) one byte
// at a time as it needs bits, so it stops exactly at the end of the stream.
func (z *zipWalker) deflatedLen(data []byte) (int, bool) {
	r := bytes.NewReader(data)
	if _, err := io.Copy(io.Discard, z.inflate(r)); err != nil {
		return 0, false
	}
	return len(data) - r.Len(), true
}

// budgetReader fails once the shared budget is spent.
type budgetReader struct {
	r      io.Reader
	budget *int64
}

var errBudget = errors.New("inflate budget spent")

func (b *budgetReader) Read(p []byte) (int, error) {
	if *b.budget <= 0 {
		return 0, errBudget
	}
	if int64(len(p)) > *b.budget {
		p = p[:*b.budget]
	}
	n, err := b.r.Read(p)
	*b.budget -= int64(n)
	return n, err
}

// skipDescriptor returns the offset after the data descriptor at b[at:]:
// an optional signature, the CRC, and both sizes in 4 bytes each, or 8 in a
// zip64 archive. The local header does not say which, so the one followed by
// the next header's "PK" wins. -1 when neither is.
func skipDescriptor(b []byte, at int) int {
	if bytes.HasPrefix(b[at:], []byte("PK\x07\x08")) {
		at += 4
	}
	for _, n := range []int{12, 20} {
		if next := at + n; next+2 <= len(b) && string(b[next:next+2]) == "PK" {
			return next
		}
	}
	return -1
}
