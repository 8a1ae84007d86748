package sniff

import (
	"archive/zip"
	"bytes"
	"errors"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"testing/iotest"

	"github.com/aigateway/gateway/internal/invalid"
)

// ---- fixtures shared by every family ----------------------------------------
// (each family's own are built in its file: images_test.go, audio_test.go...)

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
	if te := err.(*TypeError); te.Reason != reasonZip || te.Offset != -1 {
		t.Fatalf("a refusal as a whole = %+v, want offset -1", te)
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
