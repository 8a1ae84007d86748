// Package fs is the local-directory Bucket: every object is a file under one
// root directory that the code cannot escape, or, when Compose made it of
// several, a link to a directory of such files (see compose.go).
//
// Durability and atomicity come from the classic sequence: write to a
// temporary file inside the root (.tmp/), fsync it, rename it into place,
// fsync the directories. A reader therefore sees the old object or the
// whole new one, never a partial file, and a crash leaves at worst a stale
// temporary file, which New removes once it is old enough.
package fs

import (
	"context"
	"errors"
	"fmt"
	"io"
	iofs "io/fs"
	"math"
	"os"
	"path"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/aigateway/gateway/files/blob"
	"go.uber.org/zap"
)

const (
	// tmpDir holds uploads in progress. ValidateKey refuses segments
	// starting with ".", so no key can name it.
	tmpDir = ".tmp"
	// staleTempAge is how old (by modification time) a temporary file must
	// be before New deletes it as the leftover of a crashed process. A live
	// upload writes continuously, so its file is always recent.
	staleTempAge = time.Hour
	dirPerm      = 0o750
	filePerm     = 0o640
	copyBufSize  = 256 << 10
)

// Config configures a Bucket.
type Config struct {
	// Dir is the root directory; it is created (0750) when missing.
	Dir string
}

// Bucket stores objects as files under Config.Dir. It is safe for
// concurrent use; concurrent uploads of one key each write their own
// temporary file and the last rename wins.
type Bucket struct {
	root    *os.Root
	dir     string // what root was opened from, to tell when it is gone
	log     *zap.Logger
	linkMin int64 // the smallest Compose source linked rather than copied
}

var (
	_ blob.Bucket  = (*Bucket)(nil)
	_ blob.Pending = (*Bucket)(nil)
)

// New opens (creating if needed) the directory cfg.Dir and removes
// temporary files left there by a crashed process.
func New(cfg Config, log *zap.Logger) (*Bucket, error) {
	if cfg.Dir == "" {
		return nil, &blob.ConfigError{Field: "fs.dir", Problem: "must be set"}
	}
	if err := os.MkdirAll(cfg.Dir, dirPerm); err != nil {
		return nil, fmt.Errorf("fs: create %s: %w", cfg.Dir, classify(err))
	}
	root, err := os.OpenRoot(cfg.Dir)
	if err != nil {
		return nil, fmt.Errorf("fs: open %s: %w", cfg.Dir, classify(err))
	}
	for _, dir := range []string{tmpDir, composedDir} {
		if err := root.Mkdir(dir, dirPerm); err != nil && !errors.Is(err, iofs.ErrExist) {
			root.Close()
			return nil, fmt.Errorf("fs: create %s: %w", dir, classify(err))
		}
		// Something else in its place would fail every upload or
		// compose later, with less to say why.
		if info, err := root.Lstat(dir); err != nil || !info.IsDir() {
			root.Close()
			return nil, fmt.Errorf("fs: %s in %s is not a directory: move it away", dir, cfg.Dir)
		}
	}
	b := &Bucket{root: root, dir: cfg.Dir, log: log, linkMin: linkMinSize}
	b.removeStaleTemps(time.Now().Add(-staleTempAge))
	b.removeOrphans(time.Now().Add(-staleTempAge))
	return b, nil
}

func (b *Bucket) removeStaleTemps(before time.Time) {
	entries, err := iofs.ReadDir(b.root.FS(), tmpDir)
	if err != nil {
		b.log.Warn("fs: cannot list temporary files", zap.Error(err))
		return
	}
	for _, e := range entries {
		info, err := e.Info()
		if err != nil || !info.ModTime().Before(before) {
			continue
		}
		name := path.Join(tmpDir, e.Name())
		if err := b.root.RemoveAll(name); err != nil {
			b.log.Warn("fs: cannot remove stale temporary file", zap.String("file", name), zap.Error(err))
			continue
		}
		b.log.Info("fs: removed stale temporary file", zap.String("file", name))
	}
}

var copyBufs = sync.Pool{New: func() any { return new([copyBufSize]byte) }}

// Upload implements blob.Bucket. The object is visible only after its
// bytes and its directory entry are fsynced.
func (b *Bucket) Upload(ctx context.Context, key string, r io.Reader, size int64, opts blob.UploadOptions) (blob.Object, error) {
	if err := blob.ValidateKey(key); err != nil {
		return blob.Object{}, err
	}
	if err := ctx.Err(); err != nil {
		return blob.Object{}, fmt.Errorf("fs: upload %s: %w", key, err)
	}
	body := blob.NewBody(r, size)
	fail := func(err error) (blob.Object, error) {
		return blob.Object{}, fmt.Errorf("fs: upload %s: %w", key, body.Cause(ctx, err))
	}

	n, err := b.write(ctx, key, func(f *os.File) (int64, error) { return copyBody(ctx, f, body) })
	if err != nil {
		return fail(err)
	}
	return blob.Object{Key: key, Size: n, ContentType: "", Modified: time.Now()}, nil
}

// write stores under key what fill writes into a temporary file, all or
// nothing: the file is fsynced, renamed into place unless ctx has ended,
// and its directories fsynced; on any failure the temporary file is
// removed. Errors are classified for a write.
func (b *Bucket) write(ctx context.Context, key string, fill func(f *os.File) (int64, error)) (int64, error) {
	dir := path.Dir(key)
	if dir != "." {
		if err := b.root.MkdirAll(dir, dirPerm); err != nil {
			return 0, b.rootOr(classifyWrite(err))
		}
	}
	tmp, f, err := b.createTemp()
	if err != nil {
		return 0, b.rootOr(classifyWrite(err))
	}
	committed := false
	defer func() {
		if committed {
			return
		}
		f.Close() // already closed on most paths; the error is irrelevant here
		if err := b.root.Remove(tmp); err != nil && !errors.Is(err, iofs.ErrNotExist) {
			b.log.Error("fs: cannot remove temporary file of a failed write", zap.String("file", tmp), zap.Error(err))
		}
	}()

	n, err := fill(f)
	if err != nil {
		return 0, classifyWrite(err)
	}
	if err := f.Sync(); err != nil {
		return 0, classifyWrite(err)
	}
	if err := f.Close(); err != nil {
		return 0, classifyWrite(err)
	}
	committed, err = b.commit(ctx, tmp, key)
	if err != nil {
		return 0, err
	}
	return n, nil
}

// commit renames tmp, durable already, to key and makes the name durable.
// It reports whether tmp was renamed. A composed object it replaces has
// its segments retired.
func (b *Bucket) commit(ctx context.Context, tmp, key string) (renamed bool, err error) {
	// Last chance to honour a cancellation: after the rename the object is
	// visible.
	if err := ctx.Err(); err != nil {
		return false, err
	}
	dir := path.Dir(key)
	var replaced string // the segment directory of the composed object at key, if one is
	if info, err := b.root.Lstat(key); err == nil && info.Mode()&iofs.ModeSymlink != 0 {
		if l, err := b.composedLayout(key); err == nil {
			replaced = l.dir
		}
	}
	if err := b.rename(tmp, key, dir); err != nil {
		return false, classifyWrite(err)
	}
	if err := b.syncDirs(dir); err != nil {
		// The object is in place but its name may not survive a crash. The
		// caller will record no metadata for it, so remove it rather than
		// leave an orphan.
		if rerr := b.root.Remove(key); rerr != nil {
			b.log.Error("fs: cannot remove object after a failed directory sync", zap.String("key", key), zap.Error(rerr))
		}
		return true, classifyWrite(err)
	}
	if replaced != "" {
		b.retire(replaced)
	}
	return true, nil
}

// rename moves tmp to key. A Delete of the directory's last object removes
// the emptied directory (see Delete), maybe between this write's MkdirAll
// and its rename: the directory is then made again and the rename retried.
func (b *Bucket) rename(tmp, key, dir string) error {
	err := b.root.Rename(tmp, key)
	for try := 0; errors.Is(err, iofs.ErrNotExist) && dir != "." && try < 3; try++ {
		if err := b.root.MkdirAll(dir, dirPerm); err != nil {
			return err
		}
		err = b.root.Rename(tmp, key)
	}
	return err
}

func (b *Bucket) createTemp() (string, *os.File, error) {
	for range 3 {
		name := path.Join(tmpDir, randomName()+".part")
		f, err := b.root.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, filePerm)
		if errors.Is(err, iofs.ErrExist) {
			continue
		}
		return name, f, err
	}
	return "", nil, errors.New("fs: cannot create a unique temporary file")
}

// copyBody copies body to f in large writes, checking ctx between reads.
// Multipart readers hand out a few KiB per Read, so filling a buffer first
// saves most write system calls.
func copyBody(ctx context.Context, f *os.File, body *blob.Body) (int64, error) {
	buf := copyBufs.Get().(*[copyBufSize]byte)
	defer copyBufs.Put(buf)
	var total int64
	for {
		if err := ctx.Err(); err != nil {
			return total, err
		}
		n, rerr := body.Fill(buf[:])
		if n > 0 {
			w, werr := f.Write(buf[:n])
			total += int64(w)
			if werr != nil {
				return total, werr
			}
		}
		switch {
		case rerr == io.EOF:
			return total, nil
		case rerr != nil:
			return total, rerr
		}
	}
}

// syncDirs fsyncs dir and every parent up to the root, so that directories
// just created by MkdirAll are durable along with the renamed entry.
func (b *Bucket) syncDirs(dir string) error {
	for {
		if err := b.syncDir(dir); err != nil {
			return err
		}
		if dir == "." {
			return nil
		}
		dir = path.Dir(dir)
	}
}

// syncDir fsyncs the directory dir: the entries made or renamed in it.
func (b *Bucket) syncDir(dir string) error {
	d, err := b.root.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}

// Open implements blob.Bucket. What it returns (an *os.File, or a reader of
// a composed object's segments, all opened first) reads a complete object
// even if the key is overwritten or deleted meanwhile.
func (b *Bucket) Open(ctx context.Context, key string) (io.ReadCloser, error) {
	if err := blob.ValidateKey(key); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("fs: open %s: %w", key, err)
	}
	f, composed, err := b.open(key)
	if err != nil {
		return nil, fmt.Errorf("fs: open %s: %w", key, err)
	}
	if composed {
		r, err := b.openComposed(key, 0, math.MaxInt64)
		if err != nil {
			return nil, fmt.Errorf("fs: open %s: %w", key, err)
		}
		return r, nil
	}
	return f, nil
}

// open opens the regular file at key, or reports that key is a composed
// object (through its link, the open finds its segment directory). A
// regular file costs the open and one fstat, as it did before composed
// objects.
func (b *Bucket) open(key string) (f *os.File, composed bool, err error) {
	f, err = b.root.Open(key)
	if err != nil {
		return nil, false, b.rootOr(classify(err))
	}
	info, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, false, classify(err)
	}
	if info.Mode().IsRegular() {
		return f, false, nil
	}
	f.Close()
	if info.IsDir() {
		if l, err := b.root.Lstat(key); err == nil && l.Mode()&iofs.ModeSymlink != 0 {
			return nil, true, nil
		}
	}
	return nil, false, blob.ErrNotFound // a key prefix, or no file of the bucket's
}

// OpenRange implements blob.Bucket: a seek, then a bounded read of the
// same open file.
func (b *Bucket) OpenRange(ctx context.Context, key string, offset, length int64) (io.ReadCloser, error) {
	if err := blob.ValidateKey(key); err != nil {
		return nil, err
	}
	if offset < 0 || length < 1 {
		return nil, fmt.Errorf("fs: open %s: invalid range %d+%d", key, offset, length)
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("fs: open %s: %w", key, err)
	}
	f, composed, err := b.open(key)
	if err != nil {
		return nil, fmt.Errorf("fs: open %s: %w", key, err)
	}
	if composed {
		r, err := b.openComposed(key, offset, length)
		if err != nil {
			return nil, fmt.Errorf("fs: open %s: %w", key, err)
		}
		return r, nil
	}
	if _, err := f.Seek(offset, io.SeekStart); err != nil {
		f.Close()
		return nil, fmt.Errorf("fs: open %s: %w", key, classify(err))
	}
	return &rangeReader{LimitedReader: &io.LimitedReader{R: f, N: length}, f: f}, nil
}

// rangeReader reads a range of an open file. Unwrap hands the limited
// *os.File to a copier that can send it with sendfile(2) (net/http does
// for an *io.LimitedReader of an *os.File).
type rangeReader struct {
	*io.LimitedReader
	f *os.File
}

func (r *rangeReader) Close() error      { return r.f.Close() }
func (r *rangeReader) Unwrap() io.Reader { return r.LimitedReader }

// Stat implements blob.Bucket.
func (b *Bucket) Stat(ctx context.Context, key string) (blob.Object, error) {
	if err := blob.ValidateKey(key); err != nil {
		return blob.Object{}, err
	}
	if err := ctx.Err(); err != nil {
		return blob.Object{}, fmt.Errorf("fs: stat %s: %w", key, err)
	}
	info, err := b.root.Lstat(key)
	if err != nil {
		return blob.Object{}, fmt.Errorf("fs: stat %s: %w", key, b.rootOr(classify(err)))
	}
	switch {
	case info.Mode().IsRegular():
		return blob.Object{Key: key, Size: info.Size(), Modified: info.ModTime()}, nil
	case info.Mode()&iofs.ModeSymlink != 0:
		l, err := b.composedLayout(key)
		if err != nil {
			return blob.Object{}, fmt.Errorf("fs: stat %s: %w", key, err)
		}
		return blob.Object{Key: key, Size: l.size, Modified: info.ModTime()}, nil
	}
	return blob.Object{}, fmt.Errorf("fs: stat %s: %w", key, blob.ErrNotFound)
}

// Delete implements blob.Bucket. Parent directories it empties are
// removed too, so that directories of objects long gone (an upload's parts,
// a workspace's files) do not pile up for every walk to read; a write into
// a directory removed under it makes it again (rename).
func (b *Bucket) Delete(ctx context.Context, key string) error {
	if err := blob.ValidateKey(key); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("fs: delete %s: %w", key, err)
	}
	info, err := b.root.Lstat(key)
	if err != nil {
		if err := b.rootOr(classify(err)); !errors.Is(err, blob.ErrNotFound) {
			return fmt.Errorf("fs: delete %s: %w", key, err)
		}
		return nil // deleting what is not there succeeds
	}
	if info.IsDir() {
		return nil // a key prefix, not an object
	}
	var segments string // of a composed object, removed after its link
	if info.Mode()&iofs.ModeSymlink != 0 {
		if l, err := b.composedLayout(key); err == nil {
			segments = l.dir
		}
	}
	if err := b.root.Remove(key); err != nil {
		if err := classify(err); errors.Is(err, blob.ErrNotFound) {
			return nil
		}
		return fmt.Errorf("fs: delete %s: %w", key, classify(err))
	}
	if segments != "" {
		b.retire(segments)
	}
	// Removing a directory that is not empty fails, which ends the climb:
	// only directories this delete emptied go.
	for dir := path.Dir(key); dir != "."; dir = path.Dir(dir) {
		if b.root.Remove(dir) != nil {
			break
		}
	}
	return nil
}

// List implements blob.Bucket.
func (b *Bucket) List(ctx context.Context, prefix string) ([]string, error) {
	var keys []string
	// Only the directory the prefix lies in is walked ("up/" walks up,
	// "ws/abc" walks ws), not the whole bucket.
	start := path.Dir(prefix + "x")
	err := iofs.WalkDir(b.root.FS(), start, func(name string, d iofs.DirEntry, err error) error {
		if errors.Is(err, iofs.ErrNotExist) && name == start && start != "." && b.rootMoved(blob.ErrUnavailable) == nil {
			return iofs.SkipAll // nothing under the prefix, in a root still there
		}
		if err != nil {
			return err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		if d.IsDir() {
			if name == tmpDir || name == composedDir {
				return iofs.SkipDir
			}
			return nil
		}
		if !strings.HasPrefix(name, prefix) {
			return nil
		}
		switch {
		case d.Type().IsRegular():
			keys = append(keys, name)
		case d.Type()&iofs.ModeSymlink != 0:
			// A composed object, unless the link is not one of ours
			// (WalkDir does not follow links).
			if _, err := b.composedLayout(name); err == nil {
				keys = append(keys, name)
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("fs: list %q: %w", prefix, b.rootOr(classify(err)))
	}
	slices.Sort(keys)
	return keys, nil
}

// ListAfter implements blob.Bucket. The walk is local, so it
// lists and then pages.
func (b *Bucket) ListAfter(ctx context.Context, prefix, after string, limit int) ([]string, error) {
	keys, err := b.List(ctx, prefix)
	if err != nil {
		return nil, err
	}
	i, found := slices.BinarySearch(keys, after)
	if found {
		i++
	}
	return slices.Clone(keys[i:min(i+limit, len(keys))]), nil
}

// PendingUploads implements blob.Pending: the temporary files of
// uploads in progress (or left by a crash).
func (b *Bucket) PendingUploads(ctx context.Context) ([]string, error) {
	entries, err := iofs.ReadDir(b.root.FS(), tmpDir)
	if err != nil {
		return nil, fmt.Errorf("fs: list %s: %w", tmpDir, b.rootOr(classify(err)))
	}
	var out []string
	for _, e := range entries {
		out = append(out, path.Join(tmpDir, e.Name()))
	}
	return out, nil
}

// AbortPending implements blob.Pending: the temporary files
// last written before before (a live upload writes its own all along).
func (b *Bucket) AbortPending(ctx context.Context, before time.Time, limit int) (int, error) {
	entries, err := iofs.ReadDir(b.root.FS(), tmpDir)
	if err != nil {
		return 0, fmt.Errorf("fs: list %s: %w", tmpDir, b.rootOr(classify(err)))
	}
	removed := 0
	for _, e := range entries {
		if removed >= limit {
			break
		}
		if err := ctx.Err(); err != nil {
			return removed, err
		}
		info, err := e.Info()
		if err != nil || !info.ModTime().Before(before) {
			continue // gone meanwhile, or still being written
		}
		if err := b.root.RemoveAll(path.Join(tmpDir, e.Name())); err != nil {
			return removed, fmt.Errorf("fs: remove %s: %w", e.Name(), classify(err))
		}
		removed++
	}
	return removed, nil
}

// Check implements blob.Bucket: the root and its temporary directory
// are still there.
func (b *Bucket) Check(ctx context.Context) error {
	if err := b.rootMoved(blob.ErrNotFound); err != nil {
		return fmt.Errorf("fs: check: %w", err)
	}
	// A write, not a stat: a full disk (or an exhausted inode or quota
	// budget) answers a stat but refuses every upload, and readiness must
	// say so. One small synced file, removed at once, per check.
	name, f, err := b.createTemp()
	if err != nil {
		return fmt.Errorf("fs: check: %w", classifyWrite(err))
	}
	defer func() {
		_ = f.Close()
		_ = b.root.Remove(name)
	}()
	if _, err := f.Write(checkProbe[:]); err != nil {
		return fmt.Errorf("fs: check: write: %w", classifyWrite(err))
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("fs: check: sync: %w", classifyWrite(err))
	}
	return nil
}

// checkProbe is what Check writes: one page, so the file system must
// allocate a block for it.
var checkProbe [4096]byte

// rootOr returns err, unless err says a path does not exist because the
// root directory itself is gone or replaced: then the storage is out of
// reach (ErrUnavailable), and no object may be reported missing, nor a
// delete done. The check costs a stat, on the not-found path only.
func (b *Bucket) rootOr(err error) error {
	if !errors.Is(err, iofs.ErrNotExist) && !errors.Is(err, syscall.ENOTDIR) {
		return err
	}
	if moved := b.rootMoved(blob.ErrUnavailable); moved != nil {
		return moved
	}
	return err
}

// rootMoved reports whether the root directory New opened is still what
// its path names. Nothing there is missing (a bucket that does not exist,
// as a store without its bucket; for the data operations, unavailable);
// anything else there, or no way to tell, is ErrUnavailable.
func (b *Bucket) rootMoved(missing error) error {
	named, err := os.Stat(b.dir)
	if errors.Is(err, iofs.ErrNotExist) {
		return fmt.Errorf("%w: the root directory %s is gone", missing, b.dir)
	}
	if err != nil {
		return fmt.Errorf("%w: %w", blob.ErrUnavailable, err)
	}
	opened, err := b.root.Stat(".")
	if err != nil {
		return fmt.Errorf("%w: %w", blob.ErrUnavailable, err)
	}
	if !os.SameFile(named, opened) {
		return fmt.Errorf("%w: the root directory %s was replaced", blob.ErrUnavailable, b.dir)
	}
	return nil
}

// Close implements blob.Bucket.
func (b *Bucket) Close() error { return b.root.Close() }

// classifyWrite is classify for writes: a missing path while writing (a
// parent of the key is an object, say) is not the caller's "no such object".
func classifyWrite(err error) error {
	if errors.Is(err, iofs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
		return err
	}
	return classify(err)
}

// classify wraps an OS error into the backends sentinel it stands for.
func classify(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, iofs.ErrNotExist), errors.Is(err, syscall.ENOTDIR):
		return fmt.Errorf("%w: %w", blob.ErrNotFound, err)
	case errors.Is(err, iofs.ErrPermission):
		return fmt.Errorf("%w: %w", blob.ErrAccessDenied, err)
	case errors.Is(err, syscall.ENOSPC), errors.Is(err, syscall.EDQUOT), errors.Is(err, syscall.EIO),
		errors.Is(err, syscall.EROFS), errors.Is(err, os.ErrClosed):
		return fmt.Errorf("%w: %w", blob.ErrUnavailable, err)
	}
	return err
}
