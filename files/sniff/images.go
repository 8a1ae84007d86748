// PNG, JPEG and GIF images, recognised from their headers. WebP lives in a
// RIFF container, beside WAVE audio: see riff.go.

package sniff

import "bytes"

// sniffPNG checks the header of b, which starts with "\x89PNG".
func sniffPNG(b []byte) (mime, family string) {
	// The signature, then the IHDR chunk, which must come first.
	if bytes.HasPrefix(b, []byte("\x89PNG\r\n\x1a\n\x00\x00\x00\x0dIHDR")) {
		return MimePNG, ""
	}
	return "", reasonPNG
}

// sniffJPEG checks the header of b, which starts with the SOI marker.
func sniffJPEG(b []byte) (mime, family string) {
	// SOI, then the first marker (APPn, DQT, SOFn, ...).
	if len(b) >= 4 && b[2] == 0xff && b[3] >= 0xc0 && b[3] < 0xff {
		return MimeJPEG, ""
	}
	return "", reasonJPEG
}

// sniffGIF checks the header of b, which starts with "GIF8".
func sniffGIF(b []byte) (mime, family string) {
	// Header and the 7-byte logical screen descriptor.
	if (bytes.HasPrefix(b, []byte("GIF87a")) || bytes.HasPrefix(b, []byte("GIF89a"))) && len(b) >= 13 {
		return MimeGIF, ""
	}
	return "", reasonGIF
}
