// PDF, recognised from its header.

package sniff

// sniffPDF checks the header of b, which starts with "%PDF-".
func sniffPDF(b []byte) (mime, family string) {
	// "%PDF-1.7": the version must follow.
	if len(b) >= 8 && isDigit(b[5]) && b[6] == '.' && isDigit(b[7]) {
		return MimePDF, ""
	}
	return "", reasonPDF
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }
