package sniff

import (
	"bytes"
	"encoding/binary"
	"errors"
	"testing"
)

// ---- audio fixtures built in code -------------------------------------------

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

// ---- audio tests -------------------------------------------------------------

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
