// Package blob is the contract between the file service and the places that
// store uploaded files: the Bucket interface, the errors its implementations
// wrap, the key rules they all enforce, and Body, the reader adapter they use
// to honour the all-or-nothing upload rule. It lives beside its consumer,
// the file service; the implementations live in backends/storage (fs, s3,
// gcs), where backends/storage/storagetest holds the contract suite every
// one of them runs.
package blob

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// Bucket stores opaque objects under keys chosen by the gateway. Every
// implementation (fs, s3, gcs) has every method; Pending is the one
// capability a backend may lack.
//
// Implementations are safe for concurrent use. Errors are checked in this
// order, so every backend reports the same cause first:
//
//  1. A method taking a key validates it with ValidateKey before anything
//     else: a bad key is an error wrapping ErrInvalidKey, even on a closed
//     bucket. (List and ListAfter take a prefix, which is not a key and is
//     not validated: "" lists everything.)
//  2. A closed bucket is ErrUnavailable, and an ended ctx wraps ctx.Err().
//  3. The storage's own answer: failures wrap ErrUnavailable (unreachable,
//     5xx, throttled, disk full: retrying later may succeed),
//     ErrAccessDenied (credentials or permissions) or ErrNotFound (as each
//     method says); other errors are internal.
//
// Error strings name keys but never credentials. The contract suite in
// backends/storage/storagetest checks this behaviour on every
// implementation against a real server.
type Bucket interface {
	// Upload stores the bytes of r under key, replacing any existing object.
	// size is the exact length when known, or -1 when unknown (the usual
	// case: the HTTP layer streams a multipart part whose length it learns
	// only at EOF).
	//
	// All or nothing: the object becomes visible only once every byte is
	// durably stored, and on any error nothing is left behind (no object, no
	// temporary file, no pending multipart upload) and an object previously
	// stored under key is kept. Causes of failure, in the order they are
	// reported: an error returned by r (wrapped with %w, so errors.As finds
	// e.g. the caller's size-limit error), a body longer or shorter than a
	// known size (a *SizeError, wrapping ErrSizeMismatch), ctx ending
	// (wrapping ctx.Err()), then the backend's own failure. A missing bucket
	// is never ErrNotFound, which callers take for "no such object".
	// Concurrent uploads of one key leave exactly one of them, whole.
	//
	// Upload reads r until io.EOF and does not close it.
	Upload(ctx context.Context, key string, r io.Reader, size int64, opts UploadOptions) (Object, error)

	// Compose stores under dst the concatenation of the objects srcs, in
	// the order given, replacing any existing object. It is how a file sent
	// in parts (each stored with Upload) becomes one object, and where the
	// backend can, the bytes do not pass through the gateway: S3 copies the
	// parts in the server, GCS composes them, fs copies file to file in the
	// kernel.
	//
	// Arguments (checked first, by ValidateCompose): dst and then every
	// source must be valid keys (a *KeyError); srcs holds 1 to
	// MaxComposeSources keys, may name a key more than once, and may not
	// name dst (ErrInvalidCompose). A source that does not exist, or only
	// prefixes others, is a *MissingSourceError naming it (wrapping
	// ErrNotFound); when several are missing, which one is named is the
	// backend's choice. The sources are left in place: the caller deletes
	// them once it has recorded dst. A source replaced while Compose runs
	// gives an undefined but whole dst, or an error; callers do not.
	//
	// All or nothing, as for Upload: dst becomes visible only whole, and on
	// any error — a missing source, ctx ending, the backend's failure —
	// nothing new is left behind (no object, no temporary file or object,
	// no pending multipart upload) and an object previously stored under
	// dst is kept. A process dying mid-compose leaves only what
	// Pending.PendingUploads lists and AbortPending removes. Concurrent
	// composes (or uploads) of one dst leave exactly one of them, whole.
	// Errors are reported in the order of the Bucket's rules, with the
	// classes of Upload's (an ended ctx wraps ctx.Err(), even when the
	// backend failed as a result); a missing bucket is never ErrNotFound.
	//
	// opts applies to dst as it does to an upload. The returned Object
	// describes dst.
	Compose(ctx context.Context, dst string, srcs []string, opts UploadOptions) (Object, error)

	// Open returns the content of key; the caller must close it. A missing
	// key is ErrNotFound, and so is a key that only prefixes others ("ws/1"
	// while "ws/1/f" exists). Reading the returned stream may still fail
	// (ctx ended, backend went away) with the same error classes.
	Open(ctx context.Context, key string) (io.ReadCloser, error)

	// OpenRange returns the bytes [offset, offset+length) of key; the caller
	// must close it. A range running past the end is cut at the end. A
	// missing key is ErrNotFound, as for Open. The bytes before offset are
	// never read (a seek, or a ranged request), so the cost does not depend
	// on offset. offset < 0 or length < 1 is an internal error; an offset at
	// or past the end is an empty stream or an error depending on the
	// backend, so callers check it against the object's size first.
	OpenRange(ctx context.Context, key string, offset, length int64) (io.ReadCloser, error)

	// Stat describes key without reading it. A missing key, or one that
	// only prefixes others, is ErrNotFound.
	Stat(ctx context.Context, key string) (Object, error)

	// Delete removes key. It is idempotent: deleting a missing key is nil,
	// as is deleting a key that only prefixes others (those objects are
	// left alone), so replicas and retries may delete the same key.
	Delete(ctx context.Context, key string) error

	// List returns every key starting with prefix, sorted. It never returns
	// temporary or incomplete objects, nor objects outside the bucket (a
	// configured key prefix's neighbours). It reads the whole listing, so it
	// serves tests, leak checks and operators; requests never list, and a
	// walk over a large bucket uses ListAfter.
	List(ctx context.Context, prefix string) ([]string, error)

	// ListAfter returns at most limit keys starting with prefix that sort
	// after after ("" for the first page), sorted, as List would. A page of
	// fewer than limit keys is the end of the listing. Its cost is bounded
	// by limit on the object stores (fs walks its directory tree).
	ListAfter(ctx context.Context, prefix, after string, limit int) ([]string, error)

	// Check returns nil when the storage answers and can take uploads, for
	// readiness probes; else an error wrapping ErrUnavailable,
	// ErrAccessDenied, or ErrNotFound when the bucket itself (the fs root
	// directory) is missing. It reads no object; the fs backend writes and
	// removes a small probe file, since a full disk still answers reads.
	Check(ctx context.Context) error

	// Close releases the bucket's resources; uploads already running may
	// finish. Later calls of other methods fail with ErrUnavailable.
	// Closing again is nil.
	Close() error
}

// Pending is implemented by buckets that keep state of their own for
// uploads and composes in progress, which a process dying mid-way leaves
// behind: the fs backend's temporary files, S3's multipart uploads (billed
// until aborted), the intermediate objects of GCS's composes. (An abandoned
// GCS resumable upload creates no object, cannot be listed, and expires on
// its own, so a gcs Bucket's uploads leave nothing pending.) The sweeper
// aborts what is pending past its grace; tests check that failed uploads
// and composes left nothing.
type Pending interface {
	// PendingUploads describes every unfinished upload, one string each
	// (a temporary file's path, or "key upload-id"). Empty means none.
	PendingUploads(ctx context.Context) ([]string, error)

	// AbortPending removes at most limit unfinished uploads started (for
	// the fs backend: last written) before before, and returns how many
	// it removed. It is idempotent: one already gone is not an error, so
	// replicas may sweep at once. An upload whose pending state it removed
	// fails, leaving nothing.
	AbortPending(ctx context.Context, before time.Time, limit int) (int, error)
}

// UploadOptions are optional attributes of an uploaded object.
type UploadOptions struct {
	// ContentType is stored with the object where the backend keeps one
	// (s3, gcs); empty means application/octet-stream. The fs backend does not
	// keep it: the metadata row is the authority on a file's type.
	ContentType string
}

// Object describes a stored object.
type Object struct {
	Key  string
	Size int64
	// ContentType is the stored type, empty where the backend keeps none.
	ContentType string
	// Modified is when the object was last written, as the backend saw it.
	Modified time.Time
}

// MaxKeyLen bounds keys in bytes. S3 and GCS allow 1024 bytes including the
// configured prefix; 512 leaves room for any sane prefix.
const MaxKeyLen = 512

// MaxComposeSources bounds the sources of one Compose: S3's limit on the
// parts of a multipart upload, and the most parts a resumable upload has.
const MaxComposeSources = 10000

// ValidateCompose checks the arguments of Compose in the order every
// backend reports them: dst as a key, then each source as a key (a
// *KeyError), then the list itself (an error wrapping ErrInvalidCompose):
// 1 to MaxComposeSources sources, dst not among them. A source may appear
// more than once.
func ValidateCompose(dst string, srcs []string) error {
	if err := ValidateKey(dst); err != nil {
		return err
	}
	for _, src := range srcs {
		if err := ValidateKey(src); err != nil {
			return err
		}
	}
	switch {
	case len(srcs) == 0:
		return fmt.Errorf("%w of %q: no sources", ErrInvalidCompose, dst)
	case len(srcs) > MaxComposeSources:
		return fmt.Errorf("%w of %q: %d sources, more than %d", ErrInvalidCompose, dst, len(srcs), MaxComposeSources)
	}
	for _, src := range srcs {
		if src == dst {
			// The sources would be read while dst is being replaced.
			return fmt.Errorf("%w of %q: the destination is among the sources", ErrInvalidCompose, dst)
		}
	}
	return nil
}

// ValidateKey reports whether key is an acceptable object key, returning a
// *KeyError (wrapping ErrInvalidKey) when it is not.
//
// Keys are made by the gateway ("ws/<workspace-uuid>/<file-id>"), never
// taken from filenames, so these rules only have to be strict, not
// friendly. They keep a key meaning the same thing on every backend: a
// relative slash-separated path of non-empty segments, none of them "." or
// "..", none starting with "." (reserved for backend bookkeeping such as the
// fs backend's temporary directory), no backslash, no control characters,
// valid UTF-8, at most MaxKeyLen bytes. This is what stops a key from
// escaping the fs root or aliasing another object on S3 and GCS.
func ValidateKey(key string) error {
	bad := func(reason string) error { return &KeyError{Key: key, Reason: reason} }
	switch {
	case key == "":
		return bad("empty")
	case len(key) > MaxKeyLen:
		return bad(fmt.Sprintf("longer than %d bytes", MaxKeyLen))
	case !utf8.ValidString(key):
		return bad("not valid UTF-8")
	case strings.HasPrefix(key, "/"):
		return bad("starts with /")
	case strings.HasSuffix(key, "/"):
		return bad("ends with /")
	case strings.ContainsRune(key, '\\'):
		return bad("contains a backslash")
	case strings.ContainsFunc(key, unicode.IsControl):
		return bad("contains a control character")
	}
	for seg := range strings.SplitSeq(key, "/") {
		switch {
		case seg == "":
			return bad("has an empty segment")
		case seg == "." || seg == "..":
			return bad("has a . or .. segment")
		case strings.HasPrefix(seg, "."):
			return bad("has a segment starting with .")
		}
	}
	return nil
}

// ContextCause picks the error an operation reports after failing with
// err: ctx's error when ctx has ended (with err's text beside it), since
// the end of ctx is then the likelier cause and callers match it first;
// else err.
func ContextCause(ctx context.Context, err error) error {
	if cerr := ctx.Err(); cerr != nil && !errors.Is(err, cerr) {
		return fmt.Errorf("%w (backend: %v)", cerr, err)
	}
	return err
}

// Body adapts the reader given to Upload for implementations. It enforces a
// known size (reading at most one byte past it, to notice a longer body)
// and remembers the first error the reader returned, so that an Upload can
// report that error itself with %w rather than whatever an SDK wrapped it
// into. A Body is not safe for concurrent use.
type Body struct {
	r    io.Reader
	size int64 // -1: unknown
	n    int64
	err  error // first error that was not io.EOF, or the size mismatch
}

// NewBody wraps r, whose length is size, or -1 when unknown.
func NewBody(r io.Reader, size int64) *Body {
	if size < 0 {
		size = -1
	}
	return &Body{r: r, size: size}
}

// Read reads from the underlying reader. It returns io.EOF only when the
// reader did and the length matches a known size; a mismatch is returned
// as a *SizeError. After an error every Read returns that error again.
func (b *Body) Read(p []byte) (int, error) {
	if b.err != nil {
		return 0, b.err
	}
	if b.size >= 0 {
		// Allow one byte past the size, enough to see the body is longer.
		if limit := b.size - b.n + 1; int64(len(p)) > limit {
			p = p[:limit]
		}
	}
	n, err := b.r.Read(p)
	if n < 0 || n > len(p) {
		// A broken reader; trusting n would corrupt the object.
		n, err = 0, fmt.Errorf("backends: reader returned invalid count %d", n)
	}
	b.n += int64(n)
	if b.size >= 0 && b.n > b.size {
		extra := int(b.n - b.size)
		b.err = &SizeError{Declared: b.size, Received: b.n}
		return n - extra, b.err
	}
	switch {
	case err == io.EOF && b.size >= 0 && b.n < b.size:
		b.err = &SizeError{Declared: b.size, Received: b.n}
		return n, b.err
	case err != nil && err != io.EOF:
		b.err = err
	}
	return n, err
}

// Fill reads into p until it is full or the body ends. It returns the byte
// count and io.EOF when the body ended cleanly, nil when p was filled (the
// body may hold more), or the body's error. Unlike io.ReadFull it never
// turns a reader's own io.ErrUnexpectedEOF — a truncated multipart body —
// into a clean end.
func (b *Body) Fill(p []byte) (int, error) {
	total := 0
	for total < len(p) {
		n, err := b.Read(p[total:])
		total += n
		if err != nil {
			return total, err
		}
	}
	return total, nil
}

// N is the number of bytes read so far (including any byte past a known
// size).
func (b *Body) N() int64 { return b.n }

// Err is the reader's first error other than io.EOF, or the *SizeError of a
// mismatched length, or nil.
func (b *Body) Err() error { return b.err }

// Cause picks the error an Upload reports after failing with err: the
// body's own error when it had one (it caused the failure, and callers match
// it with errors.As), else ctx's error when ctx has ended, else err.
func (b *Body) Cause(ctx context.Context, err error) error {
	if b.err != nil {
		return b.err
	}
	if cerr := ctx.Err(); cerr != nil {
		if err != nil && !errors.Is(err, cerr) {
			return fmt.Errorf("%w (backend: %v)", cerr, err)
		}
		return cerr
	}
	return err
}
