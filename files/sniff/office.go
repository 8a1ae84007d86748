// OOXML documents (DOCX, XLSX, PPTX): zip archives walked entry by entry
// within the window.

package sniff

import (
	"bytes"
	"compress/flate"
	"encoding/binary"
	"encoding/xml"
	"errors"
	"io"
	"strings"
)

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
