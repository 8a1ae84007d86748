// Command sink is the baseline of the upload benchmark (bench/uploads.sh): a
// bare net/http server that streams the "file" part of a multipart POST into
// a new file, fsyncs it and answers 200 — the least any server that stores
// an upload durably has to do, and nothing else (no auth, limits, type
// detection, hashing, logs, metadata or rename).
//
// The fsync is there because the gateway answers only once the bytes are on
// disk; without it the sink would measure the page cache, not the disk the
// gateway writes to.
//
//	sink -addr 127.0.0.1:18090 -dir /tmp/sink            # multipart -> file
//	sink -addr 127.0.0.1:18090 -mode null                # body -> io.Discard
//
// Mode null reads the raw request body and throws it away without parsing
// it: a /dev/null for checking that the load client is not the bottleneck.
//
// -readbuf N is a diagnostic, off in the benchmark: the same parser reading
// the body through an N-byte buffer, to measure what mime/multipart's 4 KiB
// reads (one read system call each) cost.
//
// Every answer is a small JSON object: {"size":N}, N being the bytes of the
// file part, or {"body_bytes":N} in null mode, the bytes of the whole body.
// Files are named by a counter; deleting them is the caller's job.
package main

import (
	"bufio"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"mime"
	"mime/multipart"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
)

// copyBufSize matches the gateway's fs backend (backends/storage/fs), so the two
// make the same number of write system calls per upload.
const copyBufSize = 256 << 10

func main() {
	addr := flag.String("addr", "127.0.0.1:18090", "listen address")
	dir := flag.String("dir", "", "directory the files are written to (mode file)")
	mode := flag.String("mode", "file", "file: multipart file part -> file + fsync; null: discard the raw body")
	fsync := flag.Bool("fsync", true, "fsync each file before answering (mode file)")
	readBuf := flag.Int("readbuf", 0, "diagnostic: read the body through a buffer of this many bytes before parsing (0: plain r.MultipartReader)")
	flag.Parse()

	s := &sink{dir: *dir, fsync: *fsync, readBuf: *readBuf}
	var h http.HandlerFunc
	switch *mode {
	case "file":
		if *dir == "" {
			log.Fatal("sink: -dir is required in mode file")
		}
		if err := os.MkdirAll(*dir, 0o750); err != nil {
			log.Fatal(err)
		}
		h = s.file
	case "null":
		h = s.null
	default:
		log.Fatalf("sink: unknown -mode %q", *mode)
	}
	log.Fatal(http.ListenAndServe(*addr, h))
}

type sink struct {
	dir     string
	fsync   bool
	readBuf int
	seq     atomic.Int64
}

var bufs = sync.Pool{New: func() any { return new([copyBufSize]byte) }}

func (s *sink) null(w http.ResponseWriter, r *http.Request) {
	buf := bufs.Get().(*[copyBufSize]byte)
	defer bufs.Put(buf)
	n, err := io.CopyBuffer(io.Discard, r.Body, buf[:])
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	fmt.Fprintf(w, "{\"body_bytes\":%d}\n", n)
}

func (s *sink) file(w http.ResponseWriter, r *http.Request) {
	mr, err := s.multipartReader(r)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	for {
		part, err := mr.NextPart()
		if errors.Is(err, io.EOF) {
			http.Error(w, "no file part", http.StatusBadRequest)
			return
		}
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		if part.FormName() != "file" {
			continue
		}
		n, err := s.store(part)
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		fmt.Fprintf(w, "{\"size\":%d}\n", n)
		return
	}
}

// multipartReader is r.MultipartReader, or with -readbuf the same parser
// reading the body through a larger buffer: mime/multipart reads its input
// 4 KiB at a time, and net/http's connection buffer is 4 KiB too, so without
// it every 4 KiB of the upload costs a read system call.
func (s *sink) multipartReader(r *http.Request) (*multipart.Reader, error) {
	if s.readBuf <= 0 {
		return r.MultipartReader()
	}
	_, params, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if err != nil || params["boundary"] == "" {
		return nil, errors.New("not multipart/form-data with a boundary")
	}
	return multipart.NewReader(bufio.NewReaderSize(r.Body, s.readBuf), params["boundary"]), nil
}

// store writes one part to a new file. A failed upload leaves its partial
// file behind: this is a benchmark baseline, not a product.
func (s *sink) store(part io.Reader) (int64, error) {
	name := filepath.Join(s.dir, fmt.Sprintf("upload-%d", s.seq.Add(1)))
	f, err := os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o640)
	if err != nil {
		return 0, err
	}
	buf := bufs.Get().(*[copyBufSize]byte)
	defer bufs.Put(buf)
	// A multipart.Part hands out a few KiB per Read; filling the buffer
	// first makes each write a large one, as the gateway does.
	var n int64
	for {
		m, rerr := fill(part, buf[:])
		if m > 0 {
			if _, err := f.Write(buf[:m]); err != nil {
				f.Close()
				return n, err
			}
			n += int64(m)
		}
		if rerr == io.EOF {
			break
		}
		if rerr != nil {
			f.Close()
			return n, rerr
		}
	}
	if s.fsync {
		if err := f.Sync(); err != nil {
			f.Close()
			return n, err
		}
	}
	return n, f.Close()
}

// fill reads into p until it is full or r fails. Unlike io.ReadFull it
// keeps a truncated part's io.ErrUnexpectedEOF an error and returns io.EOF
// only for a clean end.
func fill(r io.Reader, p []byte) (int, error) {
	total := 0
	for total < len(p) {
		n, err := r.Read(p[total:])
		total += n
		if err != nil {
			return total, err
		}
	}
	return total, nil
}
