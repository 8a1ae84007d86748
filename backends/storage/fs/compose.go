package fs

// Composed objects: a file sent in parts becomes one object without its
// bytes being copied again.
//
// A composed object is a directory of segment files under .composed/,
// named <random>-<segments>-<size>, and a symbolic link at the object's
// key pointing to it. Each large source becomes a segment as a hard link
// to the source's own file (a directory entry, no byte moved); runs of
// small sources are copied into one segment each, which bounds the files
// an object spans — and a download holds open — to about
// 2 × size / linkMinSize + 1 (513 for 8 GiB), where parts of up to 10,000
// would otherwise each be one.
//
// The link is what makes the object visible, and it is renamed into place
// as a regular object's file is: a reader sees the old object or the whole
// new one. A reader resolves the link once, opens every segment before it
// answers, and checks their count and sizes against the directory's name,
// so a delete racing it gives ErrNotFound or the whole object, and an
// object once opened reads whole whatever happens to its key.
//
// Removing a composed object (Delete, or an upload or compose replacing
// it) removes its link first, then moves its directory into .tmp and
// removes it there: a crash between the two leaves a directory no link
// names. Its owner file names the key it was made for, and New removes
// such directories once they are older than staleTempAge.

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	iofs "io/fs"
	"os"
	"path"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/aigateway/gateway/files/blob"
	"go.uber.org/zap"
)

const (
	// composedDir holds the segment directories of composed objects. Like
	// tmpDir, no key can name it.
	composedDir = ".composed"
	// ownerFile, in a segment directory, holds the key it was made for.
	ownerFile = "owner"
	// linkMinSize is the smallest source linked rather than copied into a
	// composed object. Parts are 64 MiB but the last in the SDKs' and the
	// console's uploads.
	linkMinSize = 32 << 20
	// composeChunk is how much of a source Compose copies between two
	// looks at ctx: large enough that the kernel copies in big steps,
	// small enough that a cancellation is seen within milliseconds.
	composeChunk = 32 << 20
)

// segment is one file of a composed object, or of a Compose source.
type segment struct {
	src  string // the Compose source it comes from, named when missing
	path string // relative to the root
	size int64
}

// layout is what a composed object's link says: its segment directory
// (relative to the root), the number of its segments and its size.
type layout struct {
	dir  string
	n    int
	size int64
}

// segmentName is the name of the i-th segment in its directory.
func segmentName(i int) string { return fmt.Sprintf("%06d", i) }

// linkTarget is what the link at key holds: the segment directory
// dirName, relative to the directory of key.
func linkTarget(key, dirName string) string {
	return strings.Repeat("../", strings.Count(key, "/")) + composedDir + "/" + dirName
}

// composedLayout reads the link at key. A link this package did not make
// is no object of the bucket: ErrNotFound.
func (b *Bucket) composedLayout(key string) (layout, error) {
	target, err := b.root.Readlink(key)
	if errors.Is(err, syscall.EINVAL) {
		// Not a link (any more): a regular object replaced the composed
		// one since the caller looked, or never was one.
		return layout{}, fmt.Errorf("%w: %s is not a composed object", blob.ErrNotFound, key)
	}
	if err != nil {
		return layout{}, b.rootOr(classify(err))
	}
	dir := path.Join(path.Dir(key), target)
	name, ok := strings.CutPrefix(dir, composedDir+"/")
	fields := strings.Split(name, "-")
	if !ok || strings.Contains(name, "/") || len(fields) != 3 {
		return layout{}, fmt.Errorf("%w: %s is a link to %s, not a composed object", blob.ErrNotFound, key, target)
	}
	n, nerr := strconv.Atoi(fields[1])
	size, serr := strconv.ParseInt(fields[2], 10, 64)
	if nerr != nil || serr != nil || n < 1 || size < 0 {
		return layout{}, fmt.Errorf("%w: %s is a link to %s, not a composed object", blob.ErrNotFound, key, target)
	}
	return layout{dir: dir, n: n, size: size}, nil
}

// Compose implements blob.Bucket. Sources of linkMinSize or more are
// linked, runs of smaller ones copied file to file (copy_file_range: in
// the kernel). A result of one file — one source, or only small ones — is
// a regular object; more make a composed object.
func (b *Bucket) Compose(ctx context.Context, dst string, srcs []string, opts blob.UploadOptions) (blob.Object, error) {
	if err := blob.ValidateCompose(dst, srcs); err != nil {
		return blob.Object{}, err
	}
	fail := func(err error) (blob.Object, error) {
		return blob.Object{}, fmt.Errorf("fs: compose %s: %w", dst, blob.ContextCause(ctx, err))
	}
	if err := ctx.Err(); err != nil {
		return fail(err)
	}
	// Every source is looked at before anything is written, so that a
	// missing one (the common failure: a part never sent) costs no copy.
	segs, err := b.sources(ctx, srcs)
	if err != nil {
		return fail(err)
	}
	if dir := path.Dir(dst); dir != "." {
		if err := b.root.MkdirAll(dir, dirPerm); err != nil {
			return fail(b.rootOr(classifyWrite(err)))
		}
	}
	stage, err := b.createTempDir("compose")
	if err != nil {
		return fail(b.rootOr(classifyWrite(err)))
	}
	staged := stage // what to remove if this compose fails: the stage, then the segment directory
	defer func() {
		if staged != "" {
			b.removeAll(staged, "of a failed compose")
		}
	}()
	n, size, err := b.assemble(ctx, stage, segs)
	if err != nil {
		return fail(err)
	}
	if n == 1 {
		if _, err := b.commit(ctx, path.Join(stage, segmentName(0)), dst); err != nil {
			return fail(err)
		}
		return blob.Object{Key: dst, Size: size, Modified: time.Now()}, nil
	}

	// The owner file is written last, so the directory's modification
	// time is when it was finished: the orphan sweep's age.
	if err := b.writeSynced(path.Join(stage, ownerFile), []byte(dst)); err != nil {
		return fail(classifyWrite(err))
	}
	if err := b.syncDir(stage); err != nil {
		return fail(classifyWrite(err))
	}
	segDir := path.Join(composedDir, fmt.Sprintf("%s-%d-%d", randomName(), n, size))
	if err := b.root.Rename(stage, segDir); err != nil {
		return fail(classifyWrite(err))
	}
	staged = segDir
	if err := b.syncDir(composedDir); err != nil {
		return fail(classifyWrite(err))
	}
	link := path.Join(tmpDir, randomName()+".link")
	if err := b.root.Symlink(linkTarget(dst, path.Base(segDir)), link); err != nil {
		return fail(classifyWrite(err))
	}
	renamed, err := b.commit(ctx, link, dst)
	if !renamed {
		_ = b.root.Remove(link)
	}
	if err != nil {
		return fail(err)
	}
	staged = ""
	return blob.Object{Key: dst, Size: size, Modified: time.Now()}, nil
}

// sources lists the segments of srcs in order: a regular file is one, a
// composed object its own. A missing source is a *MissingSourceError.
func (b *Bucket) sources(ctx context.Context, srcs []string) ([]segment, error) {
	segs := make([]segment, 0, len(srcs))
	for _, src := range srcs {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		info, err := b.root.Lstat(src)
		if err != nil {
			if err := b.rootOr(classify(err)); !errors.Is(err, blob.ErrNotFound) {
				return nil, err
			}
			return nil, &blob.MissingSourceError{Key: src}
		}
		switch {
		case info.Mode().IsRegular():
			segs = append(segs, segment{src: src, path: src, size: info.Size()})
		case info.Mode()&iofs.ModeSymlink != 0:
			l, err := b.composedLayout(src)
			if errors.Is(err, blob.ErrNotFound) {
				return nil, &blob.MissingSourceError{Key: src}
			} else if err != nil {
				return nil, err
			}
			for i := range l.n {
				p := path.Join(l.dir, segmentName(i))
				info, err := b.root.Lstat(p)
				if err != nil {
					return nil, &blob.MissingSourceError{Key: src}
				}
				segs = append(segs, segment{src: src, path: p, size: info.Size()})
			}
		default:
			return nil, &blob.MissingSourceError{Key: src}
		}
	}
	return segs, nil
}

// assemble makes the segment files of segs in the directory stage: each
// large one linked, each run of small ones copied into one file. It
// returns how many files it made and their total size.
func (b *Bucket) assemble(ctx context.Context, stage string, segs []segment) (n int, size int64, err error) {
	var run *os.File // the file small sources are being copied into
	endRun := func() error {
		if run == nil {
			return nil
		}
		err := run.Sync()
		if cerr := run.Close(); err == nil {
			err = cerr
		}
		run = nil
		return err
	}
	defer func() {
		if run != nil {
			run.Close()
		}
	}()
	for _, s := range segs {
		if err := ctx.Err(); err != nil {
			return 0, 0, err
		}
		if s.size >= b.linkMin {
			if err := endRun(); err != nil {
				return 0, 0, classifyWrite(err)
			}
			name := path.Join(stage, segmentName(n))
			if err := b.root.Link(s.path, name); err != nil {
				if errors.Is(err, iofs.ErrNotExist) {
					return 0, 0, &blob.MissingSourceError{Key: s.src}
				}
				return 0, 0, classifyWrite(err)
			}
			// The size of what was linked, which a source replaced since
			// it was looked at may have changed.
			info, err := b.root.Lstat(name)
			if err != nil {
				return 0, 0, classifyWrite(err)
			}
			n++
			size += info.Size()
			continue
		}
		if run == nil {
			run, err = b.root.OpenFile(path.Join(stage, segmentName(n)), os.O_WRONLY|os.O_CREATE|os.O_EXCL, filePerm)
			if err != nil {
				return 0, 0, classifyWrite(err)
			}
			n++
		}
		copied, err := b.copySource(ctx, run, s)
		size += copied
		if err != nil {
			return 0, 0, err
		}
	}
	if err := endRun(); err != nil {
		return 0, 0, classifyWrite(err)
	}
	return n, size, nil
}

// copySource appends the content of s to f, in chunks with a look at ctx
// between them.
func (b *Bucket) copySource(ctx context.Context, f *os.File, s segment) (int64, error) {
	in, err := b.root.Open(s.path)
	if err != nil {
		if errors.Is(err, iofs.ErrNotExist) {
			return 0, &blob.MissingSourceError{Key: s.src}
		}
		return 0, classify(err)
	}
	defer in.Close()
	var total int64
	for {
		if err := ctx.Err(); err != nil {
			return total, err
		}
		// CopyN hands f an *io.LimitedReader of an *os.File, which
		// (*os.File).ReadFrom still copies with copy_file_range.
		n, err := io.CopyN(f, in, composeChunk)
		total += n
		switch {
		case err == io.EOF:
			return total, nil
		case err != nil:
			return total, classifyWrite(err)
		}
	}
}

// openComposed opens every segment of the composed object at key and
// returns a reader of [offset, offset+length) of it. A segment directory
// gone or changed since the link was read (a delete racing) is
// ErrNotFound.
func (b *Bucket) openComposed(key string, offset, length int64) (*segmentsReader, error) {
	l, err := b.composedLayout(key)
	if err != nil {
		return nil, err
	}
	dir, err := b.root.OpenRoot(l.dir)
	if err != nil {
		return nil, b.rootOr(classify(err))
	}
	defer dir.Close()
	files := make([]*os.File, 0, l.n)
	sizes := make([]int64, 0, l.n)
	var total int64
	for i := range l.n {
		f, err := dir.Open(segmentName(i))
		if err == nil {
			var info os.FileInfo
			if info, err = f.Stat(); err == nil {
				files, sizes, total = append(files, f), append(sizes, info.Size()), total+info.Size()
				continue
			}
			f.Close()
		}
		closeAll(files)
		return nil, b.rootOr(classify(err))
	}
	if total != l.size {
		closeAll(files)
		return nil, fmt.Errorf("%w: the segments of %s hold %d bytes, not %d", blob.ErrNotFound, key, total, l.size)
	}
	return newSegmentsReader(files, sizes, offset, length)
}

// retire removes the segment directory dir of an object no longer named
// by its link: moved into .tmp first, so that a removal cut short is
// finished by the sweep of stale temporary files.
func (b *Bucket) retire(dir string) {
	tmp := path.Join(tmpDir, path.Base(dir)+".retired")
	if err := b.root.Rename(dir, tmp); err != nil {
		if !errors.Is(err, iofs.ErrNotExist) { // retired already, by a racing replacement
			b.log.Error("fs: cannot retire the segments of a replaced or deleted object", zap.String("dir", dir), zap.Error(err))
		}
		return
	}
	b.removeAll(tmp, "of a replaced or deleted object")
}

// removeOrphans retires the segment directories older than before whose
// owner key does not link to them (a crash between a link's removal and
// its directory's, or two replacements of one key racing).
func (b *Bucket) removeOrphans(before time.Time) {
	entries, err := iofs.ReadDir(b.root.FS(), composedDir)
	if err != nil {
		b.log.Warn("fs: cannot list composed objects", zap.Error(err))
		return
	}
	for _, e := range entries {
		info, err := e.Info()
		if err != nil || !info.ModTime().Before(before) {
			continue
		}
		dir := path.Join(composedDir, e.Name())
		owner, err := b.root.ReadFile(path.Join(dir, ownerFile))
		if err != nil || blob.ValidateKey(string(owner)) != nil {
			b.log.Warn("fs: a composed object's segments name no owner; kept", zap.String("dir", dir))
			continue
		}
		l, err := b.composedLayout(string(owner))
		switch {
		case err == nil && l.dir == dir:
			continue // in use
		case err == nil, errors.Is(err, blob.ErrNotFound):
			// Another composed object, a regular one, or none.
		default:
			b.log.Warn("fs: cannot tell whether composed segments are in use; kept", zap.String("dir", dir), zap.Error(err))
			continue
		}
		b.retire(dir)
		b.log.Info("fs: removed the segments of a composed object no key names", zap.String("dir", dir))
	}
}

// createTempDir makes a new directory in .tmp.
func (b *Bucket) createTempDir(kind string) (string, error) {
	for range 3 {
		name := path.Join(tmpDir, randomName()+"."+kind)
		err := b.root.Mkdir(name, dirPerm)
		if errors.Is(err, iofs.ErrExist) {
			continue
		}
		return name, err
	}
	return "", errors.New("fs: cannot create a unique temporary directory")
}

// writeSynced writes a small new file and fsyncs it.
func (b *Bucket) writeSynced(name string, data []byte) error {
	f, err := b.root.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, filePerm)
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if serr := f.Sync(); err == nil {
		err = serr
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// removeAll removes name and what it holds, logging a failure: what is
// left in .tmp goes with the next sweep of stale temporary files.
func (b *Bucket) removeAll(name, what string) {
	if err := b.root.RemoveAll(name); err != nil {
		b.log.Error("fs: cannot remove the temporary files "+what, zap.String("file", name), zap.Error(err))
	}
}

func randomName() string {
	var rnd [16]byte
	rand.Read(rnd[:])
	return hex.EncodeToString(rnd[:])
}

func closeAll(files []*os.File) {
	for _, f := range files {
		f.Close()
	}
}
