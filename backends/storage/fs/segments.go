package fs

import (
	"errors"
	"io"
	"os"
)

// segmentsReader reads a range of a composed object from its segment
// files, opened beforehand. WriteTo hands each file to the destination as
// an *io.LimitedReader of an *os.File, so a download still goes out with
// sendfile(2), one segment after the other.
type segmentsReader struct {
	pieces []piece // what is left to read, in order
	files  []*os.File
}

// piece is the part of one segment file still to be read, from the file's
// current offset.
type piece struct {
	f *os.File
	n int64
}

// newSegmentsReader positions a reader of files (of sizes) at offset, for
// at most length bytes. It owns files from then on, even on error.
func newSegmentsReader(files []*os.File, sizes []int64, offset, length int64) (*segmentsReader, error) {
	r := &segmentsReader{files: files}
	var start int64 // of the segment at hand, in the object
	for i, f := range files {
		end := start + sizes[i]
		if length > 0 && end > offset && sizes[i] > 0 {
			from := max(offset-start, 0)
			if from > 0 {
				if _, err := f.Seek(from, io.SeekStart); err != nil {
					r.Close()
					return nil, classify(err)
				}
			}
			n := min(sizes[i]-from, length)
			r.pieces = append(r.pieces, piece{f: f, n: n})
			length -= n
		}
		start = end
	}
	return r, nil
}

func (r *segmentsReader) Read(p []byte) (int, error) {
	for len(r.pieces) > 0 {
		pc := &r.pieces[0]
		if int64(len(p)) > pc.n {
			p = p[:pc.n]
		}
		n, err := pc.f.Read(p)
		pc.n -= int64(n)
		if pc.n == 0 {
			r.pieces = r.pieces[1:]
			err = nil
		} else if err == io.EOF {
			err = io.ErrUnexpectedEOF // the segment shrank: never a short object that looks whole
		}
		if n > 0 || err != nil {
			return n, err
		}
	}
	return 0, io.EOF
}

// WriteTo implements io.WriterTo, which io.Copy prefers.
func (r *segmentsReader) WriteTo(w io.Writer) (int64, error) {
	var total int64
	for len(r.pieces) > 0 {
		pc := &r.pieces[0]
		lr := &io.LimitedReader{R: pc.f, N: pc.n}
		n, err := io.Copy(w, lr)
		total += n
		pc.n = lr.N
		if err != nil {
			return total, err
		}
		if pc.n > 0 {
			return total, io.ErrUnexpectedEOF
		}
		r.pieces = r.pieces[1:]
	}
	return total, nil
}

// Close closes every segment file.
func (r *segmentsReader) Close() error {
	var errs []error
	for _, f := range r.files {
		errs = append(errs, f.Close())
	}
	r.files, r.pieces = nil, nil
	return errors.Join(errs...)
}
