package sniff

import (
	"archive/zip"
	"bytes"
	"compress/flate"
	"fmt"
	"hash/crc32"
	"io"
	"strings"
	"testing"
)

// ---- OOXML fixtures built in code ---------------------------------------------

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
