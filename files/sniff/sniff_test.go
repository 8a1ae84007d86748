package sniff

import (
	"archive/zip"
	"bytes"
	"compress/flate"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"image"
	"image/color"
	"image/gif"
	"image/jpeg"
	"image/png"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/iotest"
	"unicode/utf8"

	"github.com/aigateway/gateway/invalid"
)

// ---- fixtures built in code -------------------------------------------------

func testImage() image.Image {
	img := image.NewNRGBA(image.Rect(0, 0, 4, 4))
	for i := range 4 {
		img.Set(i, i, color.NRGBA{R: 200, G: uint8(40 * i), B: 10, A: 255})
	}
	return img
}

func pngFile(t testing.TB) []byte {
	var b bytes.Buffer
	if err := png.Encode(&b, testImage()); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func jpegFile(t testing.TB) []byte {
	var b bytes.Buffer
	if err := jpeg.Encode(&b, testImage(), nil); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func gifFile(t testing.TB) []byte {
	var b bytes.Buffer
	if err := gif.Encode(&b, testImage(), nil); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// pdfFile is a minimal one-page PDF with a correct cross-reference table.
// The second line is the customary binary comment, so it is not text.
func pdfFile() []byte {
	var b bytes.Buffer
	b.WriteString("%PDF-1.4\n%\xe2\xe3\xcf\xd3\n")
	objs := []string{
		"<< /Type /Catalog /Pages 2 0 R >>",
		"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
		"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 72 72] >>",
	}
	offsets := make([]int, len(objs))
	for i, o := range objs {
		offsets[i] = b.Len()
		fmt.Fprintf(&b, "%d 0 obj\n%s\nendobj\n", i+1, o)
	}
	xref := b.Len()
	fmt.Fprintf(&b, "xref\n0 %d\n0000000000 65535 f \n", len(objs)+1)
	for _, off := range offsets {
		fmt.Fprintf(&b, "%010d 00000 n \n", off)
	}
	fmt.Fprintf(&b, "trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n", len(objs)+1, xref)
	return b.Bytes()
}

// wavFile is 8 kHz mono 16-bit PCM; junk adds a JUNK chunk before "fmt ",
// as some recorders write to leave room for an RF64 header.
func wavFile(samples int, junk bool) []byte {
	var b bytes.Buffer
	le := binary.LittleEndian
	chunk := func(id string, body []byte) {
		b.WriteString(id)
		_ = binary.Write(&b, le, uint32(len(body)))
		b.Write(body)
	}
	b.WriteString("RIFF\x00\x00\x00\x00WAVE")
	if junk {
		chunk("JUNK", make([]byte, 28))
	}
	fmtBody := make([]byte, 16)
	le.PutUint16(fmtBody[0:], 1)     // PCM
	le.PutUint16(fmtBody[2:], 1)     // mono
	le.PutUint32(fmtBody[4:], 8000)  // sample rate
	le.PutUint32(fmtBody[8:], 16000) // byte rate
	le.PutUint16(fmtBody[12:], 2)    // block align
	le.PutUint16(fmtBody[14:], 16)   // bits per sample
	chunk("fmt ", fmtBody)
	chunk("data", make([]byte, 2*samples))
	out := b.Bytes()
	le.PutUint32(out[4:], uint32(len(out)-8))
	return out
}

// mp3Frames returns n silent MPEG-1 Layer III frames, 128 kbit/s, 44.1 kHz,
// joint stereo: a header and zeroed side information and main data, which
// decoders play as silence.
func mp3Frames(n int) []byte {
	const frameLen = 144 * 128000 / 44100 // 417, no padding
	var b bytes.Buffer
	for range n {
		frame := make([]byte, frameLen)
		copy(frame, []byte{0xff, 0xfb, 0x90, 0x44})
		b.Write(frame)
	}
	return b.Bytes()
}

// mpeg2Frames returns n MPEG-2 Layer III frames (22.05 kHz, 64 kbit/s),
// whose length uses the half-size formula.
func mpeg2Frames(n int) []byte {
	const frameLen = 72 * 64000 / 22050 // 208
	var b bytes.Buffer
	for range n {
		frame := make([]byte, frameLen)
		copy(frame, []byte{0xff, 0xf3, 0x80, 0xc4}) // version 10, layer 01, bitrate 1000, rate 00, mono
		b.Write(frame)
	}
	return b.Bytes()
}

// layer2Frames returns n MPEG-1 Layer II frames (48 kHz, 192 kbit/s).
func layer2Frames(n int) []byte {
	const frameLen = 144 * 192000 / 48000 // 576
	var b bytes.Buffer
	for range n {
		frame := make([]byte, frameLen)
		copy(frame, []byte{0xff, 0xfd, 0xa4, 0x04}) // layer 10, bitrate 1010, rate 01
		b.Write(frame)
	}
	return b.Bytes()
}

// id3Tag is an ID3v2.3 tag with a title frame and pad bytes of padding.
func id3Tag(title string, pad int) []byte {
	frame := []byte("TIT2")
	body := append([]byte{0}, title...) // ISO-8859-1 text
	frame = binary.BigEndian.AppendUint32(frame, uint32(len(body)))
	frame = append(frame, 0, 0)
	frame = append(frame, body...)
	size := len(frame) + pad
	tag := []byte{'I', 'D', '3', 3, 0, 0,
		byte(size >> 21 & 0x7f), byte(size >> 14 & 0x7f), byte(size >> 7 & 0x7f), byte(size & 0x7f)}
	tag = append(tag, frame...)
	return append(tag, make([]byte, pad)...)
}

// oggCRC is the Ogg page checksum: CRC-32, polynomial 0x04c11db7, not
// reflected, initial value 0.
func oggCRC(b []byte) uint32 {
	var crc uint32
	for _, c := range b {
		crc ^= uint32(c) << 24
		for range 8 {
			if crc&0x80000000 != 0 {
				crc = crc<<1 ^ 0x04c11db7
			} else {
				crc <<= 1
			}
		}
	}
	return crc
}

// oggPage builds one complete page carrying one packet.
func oggPage(flags byte, serial, seq uint32, packet []byte) []byte {
	var segs []byte
	for n := len(packet); ; n -= 255 {
		if n < 255 {
			segs = append(segs, byte(n))
			break
		}
		segs = append(segs, 255)
	}
	p := []byte("OggS\x00")
	p = append(p, flags)
	p = append(p, make([]byte, 8)...) // granule position
	p = binary.LittleEndian.AppendUint32(p, serial)
	p = binary.LittleEndian.AppendUint32(p, seq)
	p = append(p, 0, 0, 0, 0) // checksum, filled below
	p = append(p, byte(len(segs)))
	p = append(p, segs...)
	p = append(p, packet...)
	binary.LittleEndian.PutUint32(p[22:], oggCRC(p))
	return p
}

// theoraHeader is the start of a Theora identification packet: Ogg video.
func theoraHeader() []byte {
	return append([]byte("\x80theora\x03\x02\x01"), make([]byte, 32)...)
}

type zipEntry struct {
	name   string
	body   []byte
	method uint16
	// sized writes the sizes in the local header (as Office does) instead
	// of a data descriptor after the data (as archive/zip's Create does).
	sized bool
}

func zipFile(t testing.TB, entries ...zipEntry) []byte {
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for _, e := range entries {
		var (
			w   io.Writer
			err error
		)
		if e.sized {
			data := e.body
			if e.method == zip.Deflate {
				var c bytes.Buffer
				fw, _ := flate.NewWriter(&c, flate.DefaultCompression)
				fw.Write(e.body)
				fw.Close()
				data = c.Bytes()
			}
			w, err = zw.CreateRaw(&zip.FileHeader{Name: e.name, Method: e.method, CRC32: crc32.ChecksumIEEE(e.body),
				CompressedSize64: uint64(len(data)), UncompressedSize64: uint64(len(e.body))})
			if err == nil {
				_, err = w.Write(data)
			}
		} else {
			w, err = zw.CreateHeader(&zip.FileHeader{Name: e.name, Method: e.method})
			if err == nil {
				_, err = w.Write(e.body)
			}
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func contentTypes(overrides ...string) []byte {
	var b strings.Builder
	b.WriteString(`<?xml version="1.0" encoding="UTF-8" standalone="yes"?>` + "\n")
	b.WriteString(`<Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types">`)
	b.WriteString(`<Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/>`)
	b.WriteString(`<Default Extension="xml" ContentType="application/xml"/>`)
	for i := 0; i+1 < len(overrides); i += 2 {
		fmt.Fprintf(&b, `<Override PartName="%s" ContentType="%s"/>`, overrides[i], overrides[i+1])
	}
	b.WriteString(`<Override PartName="/docProps/core.xml" ContentType="application/vnd.openxmlformats-package.core-properties+xml"/>`)
	b.WriteString(`</Types>`)
	return []byte(b.String())
}

const rels = `<?xml version="1.0" encoding="UTF-8" standalone="yes"?>
<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships"><Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/officeDocument" Target="%s"/></Relationships>`

// officeFile is a package in the order Office writes it: content types,
// package relationships, then the parts.
func officeFile(t testing.TB, sized bool, mainPart, mainType string, parts ...string) []byte {
	entries := []zipEntry{
		{name: "[Content_Types].xml", body: contentTypes("/"+mainPart, mainType), method: zip.Deflate, sized: sized},
		{name: "_rels/.rels", body: fmt.Appendf(nil, rels, mainPart), method: zip.Deflate, sized: sized},
		{name: mainPart, body: []byte(`<?xml version="1.0"?><document/>`), method: zip.Deflate, sized: sized},
	}
	for _, p := range parts {
		entries = append(entries, zipEntry{name: p, body: []byte("<x/>"), method: zip.Deflate, sized: sized})
	}
	return zipFile(t, entries...)
}

const (
	ctDOCX = "application/vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml"
	ctXLSX = "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet.main+xml"
	ctPPTX = "application/vnd.openxmlformats-officedocument.presentationml.presentation.main+xml"
	ctDOCM = "application/vnd.ms-word.document.macroEnabled.main+xml"
	ctDOTX = "application/vnd.openxmlformats-officedocument.wordprocessingml.template.main+xml"
)

func docx(t testing.TB) []byte {
	return officeFile(t, true, "word/document.xml", ctDOCX, "word/styles.xml", "docProps/core.xml")
}

func fixture(t testing.TB, name string) []byte {
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func concat(parts ...[]byte) []byte { return bytes.Join(parts, nil) }

// incompressible returns n deterministic pseudo-random bytes.
func incompressible(n int) []byte {
	r := rand.New(rand.NewPCG(1, 2))
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

// textOf repeats line until the result is n bytes long.
func textOf(line string, n int) []byte {
	return bytes.Repeat([]byte(line), n/len(line)+1)[:n]
}

// ---- helpers ----------------------------------------------------------------

// readers wraps content in the ways a stream may deliver it.
var readers = []struct {
	name string
	wrap func(io.Reader) io.Reader
}{
	{"whole", func(r io.Reader) io.Reader { return r }},
	{"one-byte", iotest.OneByteReader},
	{"half", iotest.HalfReader},
	{"data+eof", iotest.DataErrReader},
	{"ragged", func(r io.Reader) io.Reader { return &raggedReader{r: r, rng: rand.New(rand.NewPCG(7, 8))} }},
}

// raggedReader returns pieces of random sizes, 1 to 7000 bytes.
type raggedReader struct {
	r   io.Reader
	rng *rand.Rand
}

func (r *raggedReader) Read(p []byte) (int, error) {
	if n := 1 + r.rng.IntN(7000); n < len(p) {
		p = p[:n]
	}
	return r.r.Read(p)
}

// sniff runs content through a Reader read in 4 KiB pieces and checks
// that whatever was read is exactly the content's prefix.
func sniff(t *testing.T, r io.Reader, content []byte, filename string) (mime string, read int64, err error) {
	t.Helper()
	tr, err := NewReader(r, filename)
	if err != nil {
		if tr != nil {
			t.Fatal("NewReader returned a reader with an error")
		}
		return "", 0, err
	}
	var out bytes.Buffer
	n, err := io.CopyBuffer(struct{ io.Writer }{&out}, tr, make([]byte, 4096))
	if !bytes.Equal(out.Bytes(), content[:n]) {
		t.Fatalf("read %d bytes that differ from the content", n)
	}
	if err == nil && n != int64(len(content)) {
		t.Fatalf("read %d of %d bytes without an error", n, len(content))
	}
	if tr.Err() != err {
		t.Fatalf("Err() = %v, Read returned %v", tr.Err(), err)
	}
	return tr.MimeType(), n, err
}

// ---- tests ------------------------------------------------------------------

func TestReaderAccepts(t *testing.T) {
	bigJSONLine := concat([]byte(`{"input": "`), textOf("embedding ", 2*WindowLen), []byte("\"}\n{}\n"))
	tests := []struct {
		name     string
		filename string
		content  []byte
		want     string
	}{
		{"pdf", "report.pdf", pdfFile(), MimePDF},
		{"png", "a.png", pngFile(t), MimePNG},
		{"jpeg", "a.jpg", jpegFile(t), MimeJPEG},
		{"gif", "a.gif", gifFile(t), MimeGIF},
		{"webp lossless", "a.webp", fixture(t, "lossless.webp"), MimeWebP},
		{"webp lossy", "a.webp", fixture(t, "lossy.webp"), MimeWebP},
		{"webp extended", "a.webp", fixture(t, "alpha.webp"), MimeWebP},
		{"docx sized", "a.docx", docx(t), MimeDOCX},
		{"docx with data descriptors", "a.docx", officeFile(t, false, "word/document.xml", ctDOCX, "word/styles.xml"), MimeDOCX},
		{"xlsx", "a.xlsx", officeFile(t, true, "xl/workbook.xml", ctXLSX, "xl/worksheets/sheet1.xml"), MimeXLSX},
		{"xlsx with data descriptors", "a.xlsx", officeFile(t, false, "xl/workbook.xml", ctXLSX, "xl/worksheets/sheet1.xml"), MimeXLSX},
		{"pptx", "a.pptx", officeFile(t, true, "ppt/presentation.xml", ctPPTX, "ppt/slides/slide1.xml"), MimePPTX},
		{"pptx with data descriptors", "a.pptx", officeFile(t, false, "ppt/presentation.xml", ctPPTX, "ppt/slides/slide1.xml"), MimePPTX},
		{"docx, content types after a large part", "a.docx", zipFile(t,
			zipEntry{name: "_rels/.rels", body: []byte(rels), method: zip.Deflate},
			zipEntry{name: "word/media/image1.png", body: incompressible(3 * WindowLen), method: zip.Deflate},
			zipEntry{name: "[Content_Types].xml", body: contentTypes("/word/document.xml", ctDOCX), method: zip.Deflate},
		), MimeDOCX},
		{"docx, content types stored", "a.docx", zipFile(t,
			zipEntry{name: "[Content_Types].xml", body: contentTypes("/word/document.xml", ctDOCX), method: zip.Store, sized: true},
			zipEntry{name: "word/document.xml", body: []byte("<w/>"), method: zip.Store, sized: true},
		), MimeDOCX},
		{"docx, deflated parts skipped to reach the content types", "a.docx", zipFile(t,
			zipEntry{name: "_rels/.rels", body: []byte(rels), method: zip.Deflate},
			zipEntry{name: "word/document.xml", body: textOf("<w:p>paragraph</w:p>", 40000), method: zip.Deflate},
			zipEntry{name: "[Content_Types].xml", body: contentTypes("/word/document.xml", ctDOCX), method: zip.Deflate},
		), MimeDOCX},
		{"mp3 frames", "a.mp3", mp3Frames(20), MimeMP3},
		{"mp3 one frame", "a.mp3", mp3Frames(1), MimeMP3},
		{"mp3 mpeg-2 frames", "a.mp3", mpeg2Frames(20), MimeMP3},
		{"mp2 layer II frames", "a.mp2", layer2Frames(20), MimeMP3},
		{"mp3 with ID3", "a.mp3", concat(id3Tag("Title", 0), mp3Frames(20)), MimeMP3},
		{"mp3 with padded ID3", "a.mp3", concat(id3Tag("Title", 300), mp3Frames(20)), MimeMP3},
		{"mp3 with junk after ID3", "a.mp3", concat(id3Tag("Title", 0), []byte("\x00\x00junk"), mp3Frames(20)), MimeMP3},
		{"mp3 with two ID3 tags", "a.mp3", concat(id3Tag("One", 0), id3Tag("Two", 10), mp3Frames(5)), MimeMP3},
		{"mp3 with ID3 larger than the window", "a.mp3", concat(id3Tag("Cover", 2*WindowLen), mp3Frames(5)), MimeMP3},
		{"wav", "a.wav", wavFile(4000, false), MimeWAV},
		{"wav with JUNK chunk", "a.wav", wavFile(4000, true), MimeWAV},
		{"flac", "a.flac", fixture(t, "silence.flac"), MimeFLAC},
		{"flac with ID3", "a.flac", concat(id3Tag("Title", 0), fixture(t, "silence.flac")), MimeFLAC},
		{"ogg vorbis", "a.ogg", fixture(t, "silence.ogg"), MimeOGG},
		{"ogg opus", "a.opus", fixture(t, "silence.opus"), MimeOGG},
		{"ogg skeleton then vorbis", "a.ogg", concat(oggPage(2, 1, 0, append([]byte("fishead\x00"), make([]byte, 56)...)),
			fixture(t, "silence.ogg")), MimeOGG},

		{"text", "notes.txt", []byte("hello, world\n"), MimeText},
		{"text without extension", "README", []byte("hello"), MimeText},
		{"one byte", "a.txt", []byte("x"), MimeText},
		{"text with tab, CR, LF, FF", "a.txt", []byte("a\tb\r\nc\fd\n"), MimeText},
		{"utf-8 with BOM", "a.txt", []byte("\xef\xbb\xbfgrüße, 世界, 🎉\n"), MimeText},
		{"literal U+FFFD", "a.txt", []byte("broken: \uFFFD\n"), MimeText},
		{"text larger than the window", "a.txt", textOf("line of text ✓\n", 5*WindowLen+3), MimeText},
		{"text starting like PK", "a.txt", []byte("PK notes\n"), MimeText},
		{"text starting like GIF", "a.txt", []byte("GIF8 is a prefix\n"), MimeText},
		{"text starting like %PDF-", "a.txt", []byte("%PDF-x is not a version\n"), MimeText},
		{"text starting like ID3", "a.txt", []byte("ID3 tags are for audio\n"), MimeText},
		{"markdown", "doc.md", []byte("# Title\n\ntext\n"), MimeMarkdown},
		{"markdown long extension, upper case", "docs/READ.MARKDOWN", []byte("# Title\n"), MimeMarkdown},
		{"csv", "data.csv", []byte("a,b\n1,2\n"), MimeCSV},
		{"csv of anything textual", "data.csv", []byte("just words"), MimeCSV},
		{"json object", "a.json", []byte(`{"a": [1, 2, {"b": null}]}`), MimeJSON},
		{"json array after BOM and space", "a.JSON", []byte("\xef\xbb\xbf \n\t[1, 2]\n"), MimeJSON},
		{"json longer than the window", "a.json", concat([]byte(`{"k": "`), textOf("x", 2*WindowLen), []byte(`"}`)), MimeJSON},
		{"json cut by the window inside a number", "a.json", concat([]byte("["), textOf("1234567,", WindowLen), []byte("0]")), MimeJSON},
		{"json scalar stays plain", "a.json", []byte(`"just a string"`), MimeText},
		{"json syntax error stays plain", "a.json", []byte(`{ this is not json }`), MimeText},
		{"json two values stay plain", "a.json", []byte("{}\n{}\n"), MimeText},
		{"json truncated stays plain", "a.json", []byte(`{"a": `), MimeText},
		{"ndjson", "a.jsonl", []byte("{\"a\":1}\n{\"a\":2}\n"), MimeNDJSON},
		{"ndjson CRLF", "a.ndjson", []byte("{\"a\":1}\r\n{\"a\":2}\r\n"), MimeNDJSON},
		{"ndjson one line without newline", "a.jsonl", []byte(`[1,2,3]`), MimeNDJSON},
		{"ndjson scalar lines", "a.jsonl", []byte("1\n\"two\"\n"), MimeNDJSON},
		{"ndjson first line longer than the window", "a.jsonl", bigJSONLine, MimeNDJSON},
		{"ndjson bad first line stays plain", "a.jsonl", []byte("not json\n{}\n"), MimeText},
		{"ndjson empty first line stays plain", "a.jsonl", []byte("\n{}\n"), MimeText},
		{"ndjson two values on the first line stay plain", "a.jsonl", []byte("{} {}\n"), MimeText},
		{"pretty-printed json named .jsonl stays plain", "a.jsonl", []byte("{\n  \"a\": 1\n}\n"), MimeText},
		{"extension of the folder is not the file's", "x.json/data", []byte(`{}`), MimeText},
	}
	for _, tt := range tests {
		for _, rd := range readers {
			t.Run(tt.name+"/"+rd.name, func(t *testing.T) {
				mime, _, err := sniff(t, rd.wrap(bytes.NewReader(tt.content)), tt.content, tt.filename)
				if err != nil {
					t.Fatalf("err = %v, want %s", err, tt.want)
				}
				if mime != tt.want {
					t.Fatalf("mime = %q, want %q", mime, tt.want)
				}
			})
		}
	}
}

func TestReaderRefusesFromTheWindow(t *testing.T) {
	png := pngFile(t)
	plainZip := zipFile(t, zipEntry{name: "a.txt", body: []byte("hello"), method: zip.Deflate},
		zipEntry{name: "b/c.txt", body: []byte("world"), method: zip.Deflate})
	tests := []struct {
		name    string
		content []byte
		reason  string
	}{
		{"png signature truncated", png[:4], reasonPNG},
		{"png signature without IHDR", png[:8], reasonPNG},
		{"png with a broken signature", concat([]byte("\x89PNG\r\n\x00\x00"), png[8:]), reasonPNG},
		{"jpeg SOI only", []byte{0xff, 0xd8}, reasonJPEG},
		{"jpeg without a marker", []byte{0xff, 0xd8, 0x00, 0x00, 0x01}, reasonJPEG},
		{"gif header only", []byte("GIF89a\x01\x00"), reasonGIF},
		{"gif unknown version", append([]byte("GIF88a"), make([]byte, 20)...), reasonGIF},
		{"pdf with a binary non-version", []byte("%PDF-\x00\x01\x02"), reasonPDF},
		{"riff AVI", append([]byte("RIFF\x10\x00\x00\x00AVI LIST"), make([]byte, 16)...), reasonRIFF},
		{"riff too short", []byte("RIFF\x04\x00\x00\x00"), reasonRIFF},
		{"wave without a chunk", []byte("RIFF\x04\x00\x00\x00WAVE"), reasonWAV},
		{"wave with a binary chunk id", append([]byte("RIFF\x04\x00\x00\x00WAVE\x00\x01\x02\x03"), make([]byte, 8)...), reasonWAV},
		{"webp with an unknown chunk", append([]byte("RIFF\x04\x00\x00\x00WEBPVP9 "), make([]byte, 8)...), reasonWebP},
		{"flac magic and a partial block header", []byte("fLaC\x00\x00"), reasonFLAC},
		{"flac without STREAMINFO first", append([]byte("fLaC\x04\x00\x00\x28"), make([]byte, 40)...), reasonFLAC},
		{"ID3 then fLaC without STREAMINFO", concat(id3Tag("x", 0), []byte("fLaC\x01\x00\x00\x22")), reasonFLAC},
		{"ogg theora video", oggPage(2, 1, 0, theoraHeader()), reasonOgg},
		{"ogg vorbis and theora", concat(oggPage(2, 1, 0, theoraHeader()), fixture(t, "silence.ogg")), reasonOgg},
		{"ogg magic only", []byte("OggS\x00\x02"), reasonOgg},
		{"ogg without BOS page", oggPage(0, 1, 1, []byte("\x01vorbis-not-first")), reasonOgg},
		{"ogg page cut inside the segment table", oggPage(2, 1, 0, []byte("\x01vorbis..."))[:28], reasonOgg},
		{"plain zip", plainZip, reasonZip},
		{"empty zip", zipFile(t), reasonZip},
		{"zip storing a docx", zipFile(t, zipEntry{name: "inner.docx", body: docx(t), method: zip.Store, sized: true}), reasonZip},
		{"zip with a word/ folder but other content types", zipFile(t,
			zipEntry{name: "[Content_Types].xml", body: contentTypes("/word/x.xml", "application/xml"), method: zip.Deflate},
			zipEntry{name: "word/x.xml", body: []byte("<x/>"), method: zip.Deflate}), reasonZip},
		{"zip with unreadable content types", zipFile(t,
			zipEntry{name: "[Content_Types].xml", body: []byte("<Types><Override ContentType="), method: zip.Deflate, sized: true}), reasonZip},
		{"zip with word/ and xl/ parts, no content types in view", zipFile(t,
			zipEntry{name: "word/document.xml", body: []byte("<w/>"), method: zip.Store, sized: true},
			zipEntry{name: "xl/workbook.xml", body: []byte("<x/>"), method: zip.Store, sized: true}), reasonZip},
		{"docm (macro-enabled)", officeFile(t, true, "word/document.xml", ctDOCM, "word/vbaProject.bin"), reasonOfficeKind},
		{"dotx (template)", officeFile(t, true, "word/document.xml", ctDOTX), reasonOfficeKind},
		{"docx declaring a VBA project", zipFile(t,
			zipEntry{name: "[Content_Types].xml", body: contentTypes("/word/document.xml", ctDOCX,
				"/word/vbaProject.bin", "application/vnd.ms-office.vbaProject"), method: zip.Deflate}), reasonOfficeKind},
		{"docx and xlsx main parts at once", zipFile(t,
			zipEntry{name: "[Content_Types].xml", body: contentTypes("/word/document.xml", ctDOCX,
				"/xl/workbook.xml", ctXLSX), method: zip.Deflate}), reasonOfficeKind},
		{"vbaProject.bin by name, content types out of view", zipFile(t,
			zipEntry{name: "word/document.xml", body: []byte("<w/>"), method: zip.Store, sized: true},
			zipEntry{name: "word/vbaProject.bin", body: []byte("\x00"), method: zip.Store, sized: true}), reasonOfficeKind},
		{"ID3 then AAC (ADTS)", concat(id3Tag("x", 0), bytes.Repeat([]byte{0xff, 0xf1, 0x50, 0x80, 0x02, 0x1f, 0xfc}, 50)), reasonMP3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := NewReader(bytes.NewReader(tt.content), "file.bin")
			var te *TypeError
			if !errors.As(err, &te) || !errors.Is(err, ErrUnsupportedType) {
				t.Fatalf("err = %v, want a *TypeError", err)
			}
			if te.Reason != tt.reason || te.Offset != -1 {
				t.Fatalf("reason = %q at %d, want %q", te.Reason, te.Offset, tt.reason)
			}
			if f := invalid.Fields(err); len(f) != 1 || f[0] != (invalid.Field{Name: "file", Problem: tt.reason}) {
				t.Fatalf("field problems = %v", f)
			}
		})
	}
}

func TestReaderRefusesText(t *testing.T) {
	const big = 100 << 10 // beyond the window: found while streaming
	at := func(content []byte, off int, bad string) []byte {
		out := append([]byte(nil), content[:off]...)
		return append(append(out, bad...), content[off:]...)
	}
	base := textOf("The quick brown fox jumps over the lazy dog. ", 300<<10)
	tests := []struct {
		name      string
		content   []byte
		offset    int64
		reason    string
		streaming bool // found after the window, on Read
	}{
		{"NUL at 100 KiB", at(base, big, "\x00"), big, reasonControl, true},
		{"NUL in the window", at(base, 1000, "\x00"), 1000, reasonControl, false},
		{"NUL first", []byte("\x00abc"), 0, reasonControl, false},
		{"ESC", at(base, big, "\x1b[31m"), big, reasonControl, true},
		{"vertical tab", at(base, big, "\v"), big, reasonControl, true},
		{"DEL", at(base, big, "\x7f"), big, reasonControl, true},
		{"C1 control U+0085", at(base, big, "\u0085"), big, reasonControl, true},
		{"C1 control U+009F in the window", at(base, 5, "\u009f"), 5, reasonControl, false},
		{"invalid byte 0xFF", at(base, big, "\xff"), big, reasonNotUTF8, true},
		{"lone continuation byte", at(base, big, "\x80"), big, reasonNotUTF8, true},
		{"overlong slash", at(base, big, "\xc0\xaf"), big, reasonNotUTF8, true},
		{"surrogate half", at(base, big, "\xed\xa0\x80"), big, reasonNotUTF8, true},
		{"beyond U+10FFFF", at(base, big, "\xf4\x90\x80\x80"), big, reasonNotUTF8, true},
		{"lead byte then ASCII", at(base, big, "\xe2x"), big, reasonNotUTF8, true},
		{"lead byte then ASCII across the window", at(base, WindowLen-1, "\xe2x"), WindowLen - 1, reasonNotUTF8, true},
		{"truncated rune at the end of a small file", []byte("euro \xe2\x82"), 5, reasonTruncated, false},
		{"truncated rune at the end of a big file", append(base[:big:big], 0xf0, 0x9f, 0x8e), big, reasonTruncated, true},
		{"binary after text", concat(base[:big], pngFile(t)), big, reasonNotUTF8, true},
	}
	for _, tt := range tests {
		for _, rd := range readers {
			t.Run(tt.name+"/"+rd.name, func(t *testing.T) {
				mime, read, err := sniff(t, rd.wrap(bytes.NewReader(tt.content)), tt.content, "a.txt")
				var te *TypeError
				if !errors.As(err, &te) || !errors.Is(err, ErrUnsupportedType) {
					t.Fatalf("err = %v, want a *TypeError", err)
				}
				if !strings.Contains(te.Reason, tt.reason) || te.Offset != tt.offset {
					t.Fatalf("got %q at %d, want %q at %d", te.Reason, te.Offset, tt.reason, tt.offset)
				}
				if te.Metadata()["offset"] != tt.offset {
					t.Fatalf("metadata = %v", te.Metadata())
				}
				if (mime != "") != tt.streaming {
					t.Fatalf("refused on Read = %v, want %v", mime != "", tt.streaming)
				}
				// The bytes before the offending sequence come through; so may
				// the first bytes of the sequence, when an earlier Read
				// returned them before the rest arrived.
				if tt.streaming && (mime != MimeText || read < tt.offset || read > tt.offset+3) {
					t.Fatalf("streamed %q and read %d bytes before the error, want %s and %d", mime, read, MimeText, tt.offset)
				}
			})
		}
	}
}

func TestReaderRuneAtTheWindowEdge(t *testing.T) {
	for _, r := range []string{"é", "€", "🎉"} {
		for shift := 1; shift < len(r); shift++ {
			// r starts shift bytes before the window ends: the window holds
			// an incomplete rune that the next bytes complete.
			content := concat(textOf("a", WindowLen-shift), []byte(r), []byte("after"))
			for _, rd := range readers {
				t.Run(fmt.Sprintf("%q-%d/%s", r, shift, rd.name), func(t *testing.T) {
					mime, _, err := sniff(t, rd.wrap(bytes.NewReader(content)), content, "a.md")
					if err != nil || mime != MimeMarkdown {
						t.Fatalf("mime %q, err %v", mime, err)
					}
				})
			}
		}
	}
}

func TestReaderEmpty(t *testing.T) {
	for _, rd := range readers {
		t.Run(rd.name, func(t *testing.T) {
			_, err := NewReader(rd.wrap(bytes.NewReader(nil)), "a.txt")
			if !errors.Is(err, ErrEmptyFile) {
				t.Fatalf("err = %v, want ErrEmptyFile", err)
			}
		})
	}
}

// cutReader returns its data, then err instead of io.EOF: a multipart part
// whose body was cut off ends with io.ErrUnexpectedEOF.
type cutReader struct {
	data []byte
	err  error
}

func (c *cutReader) Read(p []byte) (int, error) {
	if len(c.data) == 0 {
		return 0, c.err
	}
	n := copy(p, c.data)
	c.data = c.data[n:]
	return n, nil
}

func TestReaderPassesStreamErrors(t *testing.T) {
	t.Run("cut off while sniffing is not a short file", func(t *testing.T) {
		_, err := NewReader(&cutReader{data: []byte("hello"), err: io.ErrUnexpectedEOF}, "a.txt")
		if !errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, ErrUnsupportedType) {
			t.Fatalf("err = %v, want io.ErrUnexpectedEOF", err)
		}
	})
	t.Run("over the size limit while sniffing", func(t *testing.T) {
		r := http.MaxBytesReader(nil, io.NopCloser(bytes.NewReader(textOf("x", 100))), 10)
		_, err := NewReader(r, "a.txt")
		var mbe *http.MaxBytesError
		if !errors.As(err, &mbe) || mbe.Limit != 10 {
			t.Fatalf("err = %v, want *http.MaxBytesError", err)
		}
	})
	t.Run("over the size limit while streaming", func(t *testing.T) {
		content := textOf("x", 2*WindowLen)
		r := http.MaxBytesReader(nil, io.NopCloser(bytes.NewReader(content)), WindowLen+10)
		tr, err := NewReader(r, "a.txt")
		if err != nil {
			t.Fatal(err)
		}
		n, err := io.Copy(io.Discard, tr)
		var mbe *http.MaxBytesError
		if !errors.As(err, &mbe) || n != WindowLen+10 {
			t.Fatalf("copied %d, err = %v, want the limit's error after %d bytes", n, err, WindowLen+10)
		}
		if _, again := tr.Read(make([]byte, 10)); again != err {
			t.Fatalf("second Read err = %v, want the same error", again)
		}
		if tr.Err() != err {
			t.Fatalf("Err() = %v, want %v", tr.Err(), err)
		}
	})
	t.Run("no progress", func(t *testing.T) {
		_, err := NewReader(iotest.ErrReader(nil), "a.txt") // (0, nil) forever
		if !errors.Is(err, io.ErrNoProgress) {
			t.Fatalf("err = %v, want io.ErrNoProgress", err)
		}
	})
}

// countingReader counts the Read calls that reach the source.
type countingReader struct {
	r     io.Reader
	calls int
}

func (c *countingReader) Read(p []byte) (int, error) { c.calls++; return c.r.Read(p) }

func TestReaderDoesNotReadPastEOF(t *testing.T) {
	src := &countingReader{r: bytes.NewReader([]byte("small"))}
	tr, err := NewReader(src, "a.txt")
	if err != nil {
		t.Fatal(err)
	}
	calls := src.calls
	b, err := io.ReadAll(tr)
	if err != nil || string(b) != "small" {
		t.Fatalf("read %q, %v", b, err)
	}
	if src.calls != calls {
		t.Fatalf("source read %d more times after it reported EOF", src.calls-calls)
	}
	if tr.Err() != nil {
		t.Fatalf("Err() = %v after a clean end, want nil", tr.Err())
	}
}

func TestReaderStreamsWithoutAllocating(t *testing.T) {
	for _, tc := range []struct{ name, filename string }{{"text", "a.txt"}, {"binary", "a.mp3"}} {
		t.Run(tc.name, func(t *testing.T) {
			content := textOf("streaming text, ünïcödé ✓\n", 4<<20)
			if tc.name == "binary" {
				content = concat(mp3Frames(20), make([]byte, 4<<20))
			}
			tr, err := NewReader(bytes.NewReader(content), tc.filename)
			if err != nil {
				t.Fatal(err)
			}
			buf := make([]byte, 32<<10)
			allocs := testing.AllocsPerRun(100, func() {
				if _, err := tr.Read(buf); err != nil {
					t.Fatal(err)
				}
			})
			if allocs != 0 {
				t.Fatalf("%v allocations per Read, want 0", allocs)
			}
		})
	}
}

func TestTypeErrorText(t *testing.T) {
	err := error(&TypeError{Reason: reasonControl, Offset: 42})
	if got := err.Error(); got != "unsupported file type: text contains a NUL or control character (at byte 42)" {
		t.Fatalf("Error() = %q", got)
	}
	err = refused(reasonZip)
	if got := err.Error(); got != "unsupported file type: "+reasonZip {
		t.Fatalf("Error() = %q", got)
	}
	if _, ok := err.(*TypeError).Metadata()["offset"]; ok {
		t.Fatal("metadata has an offset for a refusal as a whole")
	}
}

// firstBadText is the plain definition the validator must agree with: the
// offset of the first rune that is invalid UTF-8 or a control character
// other than \t \n \f \r, or -1.
func firstBadText(b []byte) int64 {
	s := string(b)
	for i, r := range s {
		switch {
		case r == utf8.RuneError && !strings.HasPrefix(s[i:], "\uFFFD"),
			r < 0x20 && !strings.ContainsRune("\t\n\f\r", r),
			0x7f <= r && r <= 0x9f:
			return int64(i)
		}
	}
	return -1
}

// TestTextValidatorMatchesDefinition checks the word-at-a-time fast paths
// against firstBadText for every byte and a set of sequences, at every
// alignment, with the input cut in two at every point.
func TestTextValidatorMatchesDefinition(t *testing.T) {
	var seqs [][]byte
	for c := range 256 {
		seqs = append(seqs, []byte{byte(c)})
	}
	for _, s := range []string{"\u0080", "\u0085", "\u009f", "\u00a0", "é", "€", "\u2028", "\ufeff", "\uFFFD", "🎉",
		"\xc2", "\xe2\x82", "\xf0\x9f\x8e", "\xc0\xaf", "\xed\xa0\x80", "\xf4\x90\x80\x80", "\xc2\xc2\x85",
		"\x80\x80", "a\x00b\x7f", "\r\n\t\f"} {
		seqs = append(seqs, []byte(s))
	}
	for _, seq := range seqs {
		for pos := range 17 {
			b := concat(textOf("abcdefgh", pos), seq, textOf("ijklmnop", 17-pos))
			want := firstBadText(b)
			for split := range len(b) + 1 {
				var v textValidator
				err := v.feed(b[:split])
				if err == nil {
					err = v.feed(b[split:])
				}
				if err == nil {
					err = v.end()
				}
				got := int64(-1)
				if err != nil {
					got = err.(*TypeError).Offset
				}
				if got != want {
					t.Fatalf("%q split at %d: first bad at %d, want %d", b, split, got, want)
				}
			}
		}
	}
}

// FuzzReader checks that no input panics, that the bytes come through
// unchanged, and that the outcome does not depend on how the stream is cut.
func FuzzReader(f *testing.F) {
	for _, seed := range [][]byte{pdfFile(), pngFile(f), mp3Frames(3), wavFile(10, true), docx(f),
		fixture(f, "silence.ogg"), fixture(f, "alpha.webp"), concat(id3Tag("t", 3), mp3Frames(2)),
		[]byte("{\"a\": 1}\n"), []byte("text é\n")} {
		f.Add(seed, "a.json")
	}
	f.Fuzz(func(t *testing.T, content []byte, filename string) {
		run := func(r io.Reader) (string, int64, string) {
			tr, err := NewReader(r, filename)
			if err != nil {
				return "", 0, err.Error()
			}
			var out bytes.Buffer
			n, err := io.Copy(&out, tr)
			if !bytes.Equal(out.Bytes(), content[:n]) {
				t.Fatal("bytes changed on the way through")
			}
			if err != nil {
				return tr.MimeType(), n, err.Error()
			}
			return tr.MimeType(), n, ""
		}
		m1, n1, e1 := run(bytes.NewReader(content))
		m2, n2, e2 := run(iotest.OneByteReader(bytes.NewReader(content)))
		// n may differ by the start of a bad sequence one reader returned
		// before the rest of it arrived.
		if m1 != m2 || e1 != e2 || n1 < n2-3 || n1 > n2+3 {
			t.Fatalf("whole: %q %d %q; one byte at a time: %q %d %q", m1, n1, e1, m2, n2, e2)
		}
	})
}

// BenchmarkReader compares streaming 16 MiB through a Reader with a
// plain copy of the same bytes, both through io.CopyBuffer with a 32 KiB
// buffer into a writer that keeps nothing (no ReaderFrom or WriterTo
// shortcuts on either side). "text" is prose with a non-ASCII character
// every twenty bytes or so, "ascii" is CSV, "binary" is a PDF header then the
// same bytes (no validation after the window).
func BenchmarkReader(b *testing.B) {
	inputs := []struct{ name, filename string }{{"text", "a.txt"}, {"ascii", "a.csv"}, {"binary", "a.pdf"}}
	content := map[string][]byte{
		"text":  textOf("A line of ordinary prose, with punctuation; and a little UTF-8: café, naïve, 東京.\n", 16<<20),
		"ascii": textOf("2026-08-18,anthropic/claude-sonnet-5,1200,3400,0.0123\n", 16<<20),
	}
	content["binary"] = concat(pdfFile(), content["text"])[:16<<20]
	buf := make([]byte, 32<<10)
	sink := struct{ io.Writer }{io.Discard}
	for _, in := range inputs {
		data := content[in.name]
		b.Run(in.name+"/copy", func(b *testing.B) {
			b.SetBytes(int64(len(data)))
			for b.Loop() {
				if _, err := io.CopyBuffer(sink, struct{ io.Reader }{bytes.NewReader(data)}, buf); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(in.name+"/typereader", func(b *testing.B) {
			b.SetBytes(int64(len(data)))
			for b.Loop() {
				tr, err := NewReader(bytes.NewReader(data), in.filename)
				if err != nil {
					b.Fatal(err)
				}
				if _, err := io.CopyBuffer(sink, struct{ io.Reader }{tr}, buf); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestReaderRefusesChanceMPEGSync: two bytes of MPEG sync are easy to meet
// by chance; these are not audio, and not text either (NUL bytes), so they
// are refused rather than stored as audio/mpeg.
func TestReaderRefusesChanceMPEGSync(t *testing.T) {
	elf := concat([]byte{0xff, 0xfb, 0x00, 0x00}, []byte("\x7fELF\x02\x01\x01\x00"), make([]byte, 4096))
	utf16 := concat([]byte{0xff, 0xfe}, []byte("h\x00e\x00l\x00l\x00o\x00\n\x00"))
	for name, content := range map[string][]byte{
		"free-format header before an ELF file": elf,
		"UTF-16 text with a byte order mark":    utf16,
		"one frame header, then no frame":       concat(mp3Frames(1)[:4], bytes.Repeat([]byte{0x01, 0x00}, 2000)),
		"two frames, then no third":             concat(mp3Frames(2), bytes.Repeat([]byte{0x01, 0x00}, 2000)),
		"a lone frame cut short":                mp3Frames(1)[:200],
	} {
		t.Run(name, func(t *testing.T) {
			r, err := NewReader(bytes.NewReader(content), "file.mp3")
			if !errors.Is(err, ErrUnsupportedType) {
				t.Fatalf("NewReader = %v, %v; want ErrUnsupportedType", r, err)
			}
		})
	}
	// Whole frames to the end of a short file, and an ID3v1 trailer, are
	// still audio.
	for name, content := range map[string][]byte{
		"two whole frames":           mp3Frames(2),
		"one frame and an ID3v1 tag": concat(mp3Frames(1), []byte("TAG"), make([]byte, 125)),
	} {
		t.Run(name, func(t *testing.T) {
			r, err := NewReader(bytes.NewReader(content), "file.mp3")
			if err != nil || r.MimeType() != MimeMP3 {
				t.Fatalf("NewReader = %v; want audio/mpeg", err)
			}
		})
	}
}
