// The RIFF container, which holds both WAVE audio and WebP images.

package sniff

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
