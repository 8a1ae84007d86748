// Audio: FLAC, MPEG audio (MP3, MP2) behind optional ID3v2 tags, and Ogg.

package sniff

import (
	"bytes"
	"strings"
)

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
