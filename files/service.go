// Package files is the upload service: it decides where an upload goes
// (which workspace, native storage or a BYOK provider), holds its quota,
// streams it to the destination while checking its type and size, and makes
// it visible only once its bytes are durably stored — or leaves nothing.
package files

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/base32"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"time"

	"github.com/aigateway/gateway/files/blob"
	"github.com/aigateway/gateway/files/sniff"
	"github.com/aigateway/gateway/internal/invalid"
	"github.com/aigateway/gateway/internal/outage"
	"github.com/aigateway/gateway/policy/keys"
	"github.com/aigateway/gateway/workspace"
)

// Errors of the upload service; the HTTP layer maps each to a status.
var (
	ErrInvalidWorkspaceID = errors.New("workspace_id must be a UUID")      // 400
	ErrWorkspaceForbidden = errors.New("workspace not usable by this key") // 403
	ErrUnknownProvider    = errors.New("provider must be openai or anthropic")
	ErrTooLarge           = errors.New("file exceeds the maximum size") // 413
	ErrStorageUnavailable = errors.New("file storage unavailable")      // 503
	ErrProvider           = errors.New("provider returned an error")    // 502
	ErrProviderTimeout    = errors.New("provider timed out")            // 504
	ErrNoFile             = errors.New("no file was written")
)

// Config are the limits of uploads.
type Config struct {
	// MaxFileBytes is the largest file accepted.
	MaxFileBytes int64
	// WorkspaceQuota is the most bytes a workspace may hold in native storage.
	WorkspaceQuota int64
	// ReservationTTL is the lease of quota held for an upload: how long it
	// outlives a replica that died before settling it. Live uploads renew it
	// (see KeepReservations). Default one minute.
	ReservationTTL time.Duration
	// Backend names the native storage ("fs", "s3", "gcs") in file records.
	Backend string
}

// Admission applies the shared (fleet-wide) limits of uploads: the rate per
// workspace, the byte budget and the uploads in flight per key. Admit
// returns a release function to call exactly once with the bytes actually
// stored (0 when the upload failed).
type Admission interface {
	Admit(ctx context.Context, keyID, workspaceID string, declared int64) (release func(actual int64), err error)
}

// Service runs uploads. It is safe for concurrent use.
type Service struct {
	cfg        Config
	store      Store
	keys       ProviderKeys
	bucket     blob.Bucket
	opener     Opener
	workspaces Workspaces
	admission  Admission
	log        *slog.Logger
	now        func() time.Time
	inflight   sync.WaitGroup
	leases     leaseSet
}

// Deps are the collaborators of a Service. Opener and Admission may be nil:
// BYOK uploads then fail with ErrUnknownProvider, and no shared limits apply.
type Deps struct {
	Store      Store
	Keys       ProviderKeys
	Bucket     blob.Bucket
	Opener     Opener
	Workspaces Workspaces
	Admission  Admission
	Log        *slog.Logger
}

// NewService returns an upload Service.
func NewService(cfg Config, d Deps) *Service {
	if cfg.ReservationTTL <= 0 {
		cfg.ReservationTTL = time.Minute
	}
	if d.Log == nil {
		d.Log = slog.New(slog.DiscardHandler)
	}
	return &Service{
		cfg: cfg, store: d.Store, keys: d.Keys, bucket: d.Bucket, opener: d.Opener,
		workspaces: d.Workspaces, admission: d.Admission, log: d.Log, now: time.Now,
	}
}

// MaxFileBytes is the configured per-file limit.
func (s *Service) MaxFileBytes() int64 { return s.cfg.MaxFileBytes }

// Wait blocks until every upload begun has been committed or aborted, so a
// shutting-down process cleans up before it exits.
func (s *Service) Wait() { s.inflight.Wait() }

// Params say who uploads where.
type Params struct {
	Key *keys.APIKey
	// WorkspaceID is the workspace_id query parameter; empty means the
	// key's workspace (or its user's default one for a management key).
	WorkspaceID string
	// Provider is "" for native storage, or one of Providers.
	Provider string
	// Declared is the most bytes the request can carry (its Content-Length),
	// or -1 when unknown. It sizes the quota reservation and byte budget.
	Declared int64
}

// Upload is one upload in progress: Begin, then Write once, then Commit or
// Abort. Abort is safe to call at any point and after Commit (then it does
// nothing), so callers defer it. An Upload is used by one goroutine.
type Upload interface {
	// Write streams the file to its destination, checking its name, type
	// and size on the way. It may be called once.
	//
	// Errors: *FilenameError (ErrInvalidFilename); sniff.ErrEmptyFile and
	// *sniff.TypeError (sniff.ErrUnsupportedType) for the content;
	// *TooLargeError (ErrTooLarge) past the limit, wherever in the stream;
	// body's own error, wrapped (a cut-off body, a departed client);
	// ErrStorageUnavailable, ErrProvider or ErrProviderTimeout wrapping the
	// destination's failure.
	Write(ctx context.Context, filename string, body io.Reader) error
	// Commit records the file with its purpose ("" is DefaultPurpose; see
	// ParsePurpose), making it visible, and settles the quota and limits.
	// The purpose is given here rather than to Begin because a form may
	// send it after the file. ErrNoFile when Write stored nothing. On any
	// error the stored bytes are removed by the Abort the caller deferred.
	Commit(ctx context.Context, purpose Purpose) (Record, error)
	// Abort undoes whatever the upload did: the stored object or provider
	// file is deleted, the reservation released, the shared limits settled
	// with 0 bytes. It runs on a context detached from ctx's cancellation (a
	// departed client must not stop the cleanup) but bounded in time.
	Abort(ctx context.Context)
}

// upload is the Upload of a Service.
type upload struct {
	s         *Service
	workspace string
	keyID     string
	provider  Provider // nil for native storage
	name      string   // the provider's name
	res       *Reservation
	lease     *lease
	release   func(int64)
	// partial: the reservation is what was left of the quota, less than a
	// file may be; the file may not pass it.
	partial bool

	written   bool
	committed bool
	// keepBytes: the commit's outcome is unknown, so Abort leaves the
	// stored bytes in place.
	keepBytes bool
	done      bool
	rec       Record
}

// Begin resolves the workspace and the destination, and takes the quota
// reservation and the shared limits, before any byte is read. On error
// nothing is held.
//
// Errors: keys.ErrReadOnlyKey for a service key; ErrInvalidWorkspaceID,
// ErrWorkspaceForbidden; ErrUnknownProvider,
// ErrNoProviderKey; the Admission's denial; ErrQuotaExceeded; the store's
// and the workspace service's failures.
func (s *Service) Begin(ctx context.Context, p Params) (_ Upload, err error) {
	if p.Key.Role == keys.RoleService {
		return nil, keys.ErrReadOnlyKey
	}
	ws, err := resolveWorkspace(ctx, s.workspaces, p.Key, p.WorkspaceID)
	if err != nil {
		return nil, err
	}
	u := &upload{s: s, workspace: ws, keyID: p.Key.ID}
	s.inflight.Add(1)
	defer func() {
		if err != nil {
			u.Abort(ctx)
		}
	}()

	if p.Provider != "" {
		if u.provider, err = openProvider(ctx, s.keys, s.opener, ws, p.Provider, p.Key.ID); err != nil {
			return nil, err
		}
		u.name = p.Provider
	}
	declared := p.Declared
	if declared < 0 || declared > s.cfg.MaxFileBytes {
		declared = s.cfg.MaxFileBytes
	}
	if s.admission != nil {
		if u.release, err = s.admission.Admit(ctx, p.Key.ID, ws, declared); err != nil {
			return nil, err
		}
	}
	// Files sent to a BYOK provider count too: the quota bounds what the
	// gateway keeps records of for the workspace, wherever the bytes are.
	// The reservation takes what is left of the quota, up to the declared
	// body (a whole file when its length is unknown); the file is then
	// judged by its true size, never by its multipart envelope's, so a file
	// that fits is never refused. A declared body so far past what is left
	// that not even its envelope could explain it is refused at once.
	start := s.now()
	var res Reservation
	res, err = s.store.ReserveUpTo(ctx, ws, declared, s.cfg.WorkspaceQuota, s.cfg.ReservationTTL)
	if errors.Is(err, workspace.ErrNotFound) {
		// The workspace was deleted since it was resolved: the answer is the
		// one an upload into a workspace already gone gets (403), not a 404
		// the upload route never gives.
		return nil, fmt.Errorf("%w: %w", ErrWorkspaceForbidden, err)
	}
	if err != nil {
		return nil, err
	}
	u.res = &res
	u.partial = res.Bytes < declared
	u.lease = &lease{id: res.ID, expires: start.Add(s.cfg.ReservationTTL)}
	s.leases.add(u.lease)
	if p.Declared >= 0 && res.Bytes < declared-MultipartAllowance {
		// The deferred Abort releases the reservation.
		return nil, &QuotaError{Limit: s.cfg.WorkspaceQuota, Available: res.Bytes}
	}
	return u, nil
}

// openProvider unseals the key of workspace ws for provider name that the
// calling key keyID may use and returns that provider's client bound to
// it; uploads and reads share it. The client's mistakes name the provider
// parameter.
func openProvider(ctx context.Context, keys ProviderKeys, opener Opener, ws, name, keyID string) (Provider, error) {
	if !IsProvider(name) || opener == nil {
		return nil, fmt.Errorf("%w: %w", ErrUnknownProvider, paramError("provider", "must be openai or anthropic"))
	}
	sealed, err := keys.ProviderKey(ctx, ws, name, keyID)
	if errors.Is(err, ErrNoProviderKey) {
		return nil, fmt.Errorf("%w: %w", err, paramError("provider", "no enabled key of this provider that this API key may use is stored for the workspace"))
	}
	if err != nil {
		return nil, err
	}
	prov, err := opener.Open(ws, name, sealed)
	if err != nil {
		return nil, fmt.Errorf("open stored %s key of workspace %s: %w", name, ws, err)
	}
	return prov, nil
}

// MultipartAllowance is how much of a declared upload body is taken to be
// its multipart envelope (boundaries, part headers, small form fields) when
// judging at once whether the file can fit the quota.
const MultipartAllowance = 64 << 10

// errInvalidWorkspaceID is ErrInvalidWorkspaceID naming its parameter.
var errInvalidWorkspaceID = fmt.Errorf("%w: %w", ErrInvalidWorkspaceID, paramError("workspace_id", "must be a UUID"))

func (u *upload) Write(ctx context.Context, filename string, body io.Reader) error {
	if u.written || u.done {
		return errors.New("files: Write called twice")
	}
	u.written = true
	if err := ValidateFilename(filename); err != nil {
		return err
	}
	if err := u.lease.lost(); err != nil {
		return err
	}
	ctx, unwatch := u.lease.watch(ctx)
	defer unwatch()
	if err := u.write(ctx, filename, body); err != nil {
		if lost := u.lease.lost(); lost != nil {
			return lost // the cause, not what the stopped transfer made of it
		}
		return err
	}
	return nil
}

func (u *upload) write(ctx context.Context, filename string, body io.Reader) error {
	limited := &limitReader{r: &leaseReader{r: body, l: u.lease}, left: u.s.cfg.MaxFileBytes, limit: u.s.cfg.MaxFileBytes}
	if u.partial {
		limited.left, limited.quota = u.res.Bytes, true
		limited.reserved, limited.quotaLimit = u.res.Bytes, u.s.cfg.WorkspaceQuota
	}
	tr, err := sniff.NewReader(limited, filename)
	if err != nil {
		return err
	}
	sum := &countingReader{r: tr}
	id := newFileID()
	now := u.s.now().UTC().Truncate(time.Microsecond)
	u.rec = Record{ID: id, WorkspaceID: u.workspace, KeyID: u.keyID, Filename: filename, MimeType: tr.MimeType(), CreatedAt: now}

	if u.provider != nil {
		providerID, err := u.provider.Upload(ctx, ProviderFile{Name: filename, ContentType: tr.MimeType(), Body: sum})
		if err != nil {
			return providerError(err)
		}
		u.rec.ID, u.rec.Backend, u.rec.ObjectKey = providerID, u.name, providerID
	} else {
		key := ObjectKey(u.workspace, id)
		if _, err := u.s.bucket.Upload(ctx, key, sum, -1, blob.UploadOptions{ContentType: tr.MimeType()}); err != nil {
			return storageError(err)
		}
		u.rec.Backend, u.rec.ObjectKey = u.s.cfg.Backend, key
	}
	u.rec.Size = sum.n
	return nil
}

// stored reports whether Write placed bytes at the destination.
func (u *upload) stored() bool { return u.rec.ObjectKey != "" }

func (u *upload) Commit(ctx context.Context, purpose Purpose) (Record, error) {
	if !u.stored() {
		return Record{}, ErrNoFile
	}
	u.rec.Purpose = cmp.Or(purpose, DefaultPurpose)
	if err := u.lease.lost(); err != nil {
		return Record{}, err
	}
	u.s.leases.remove(u.lease)
	beforeCommit()
	if err := u.s.store.Commit(ctx, *u.res, u.rec); err != nil {
		if errors.Is(err, ErrReservationNotFound) {
			// Lapsed (or swept) while the upload ran: quota can no longer
			// be promised for these bytes.
			return Record{}, fmt.Errorf("%w: %w", ErrReservationLost, err)
		}
		if errors.Is(err, outage.ErrOutcomeUnknown) {
			// The record may have been written (a failover kept the
			// commit whose answer was lost): its bytes must stay. If it
			// was not, the sweeper removes native bytes as an object no
			// record names; a provider's file stays at the provider.
			u.keepBytes = true
			u.s.log.Warn("file record may or may not be stored; its bytes are kept",
				slog.String("file_id", u.rec.ID), slog.String("workspace_id", u.workspace),
				slog.String("backend", u.rec.Backend), slog.String("object", u.rec.ObjectKey), slog.Any("error", err))
		}
		return Record{}, err // the deferred Abort removes the bytes, unless kept
	}
	u.committed = true
	u.finish(ctx, u.rec.Size)
	u.s.log.Info("file stored",
		slog.String("file_id", u.rec.ID), slog.String("workspace_id", u.workspace), slog.String("key_id", u.keyID),
		slog.String("backend", u.rec.Backend), slog.Int64("size", u.rec.Size), slog.String("mime_type", u.rec.MimeType))
	return u.rec, nil
}

func (u *upload) Abort(ctx context.Context) {
	if u.done || u.committed {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	if u.stored() && !u.keepBytes {
		var err error
		if u.provider != nil {
			err = u.provider.Delete(ctx, u.rec.ObjectKey)
		} else {
			err = u.s.bucket.Delete(ctx, u.rec.ObjectKey)
		}
		if err != nil && !errors.Is(err, ErrNotFound) {
			// Left behind: say exactly what, so it can be removed by hand.
			u.s.log.Error("could not remove the bytes of a failed upload",
				slog.String("backend", u.rec.Backend), slog.String("object", u.rec.ObjectKey),
				slog.String("workspace_id", u.workspace), slog.Any("error", err))
		}
	}
	if u.res != nil {
		u.s.leases.remove(u.lease)
		if err := u.s.store.Release(ctx, *u.res); err != nil && !errors.Is(err, ErrReservationNotFound) {
			u.s.log.Warn("could not release a quota reservation; it expires by itself",
				slog.String("reservation", u.res.ID), slog.Any("error", err))
		}
	}
	u.finish(ctx, 0)
}

// finish settles the shared limits once and ends the upload's tracking.
func (u *upload) finish(_ context.Context, actual int64) {
	if u.done {
		return
	}
	u.done = true
	if u.release != nil {
		u.release(actual)
	}
	u.s.inflight.Done()
}

// beforeCommit runs between storing an upload's bytes and writing its
// record: a fault-injection point that only faultinject builds set (see
// fault_inject.go); a no-op otherwise.
var beforeCommit = func() {}

// clientFault reports whether err is the client's file or connection rather
// than the destination's failure.
func clientFault(err error) bool {
	return errors.Is(err, ErrTooLarge) || errors.Is(err, ErrQuotaExceeded) || errors.Is(err, sniff.ErrUnsupportedType) ||
		errors.Is(err, sniff.ErrEmptyFile) || errors.Is(err, context.Canceled)
}

// providerError classifies a BYOK provider failure, keeping the provider's
// details (request id) reachable for the error envelope.
func providerError(err error) error {
	switch {
	case clientFault(err), errors.Is(err, ErrProviderTimeout), errors.Is(err, ErrProvider):
		return err
	case errors.Is(err, context.DeadlineExceeded):
		return fmt.Errorf("%w: %w", ErrProviderTimeout, err)
	default:
		return fmt.Errorf("%w: %w", ErrProvider, err)
	}
}

// storageError classifies a native storage failure.
func storageError(err error) error {
	switch {
	case clientFault(err):
		return err
	case errors.Is(err, outage.ErrUnavailable), errors.Is(err, context.DeadlineExceeded):
		return fmt.Errorf("%w: %w", ErrStorageUnavailable, err)
	default:
		return err
	}
}

var fileIDEncoding = base32.NewEncoding("abcdefghijklmnopqrstuvwxyz234567").WithPadding(base32.NoPadding)

// newFileID returns "file-" and 24 random characters (120 bits).
func newFileID() string {
	var b [15]byte
	_, _ = rand.Read(b[:])
	return "file-" + fileIDEncoding.EncodeToString(b[:])
}

// TooLargeError is returned while streaming a file past the limit. It
// unwraps to ErrTooLarge.
type TooLargeError struct {
	// Limit is the largest file accepted, in bytes: Config.MaxFileBytes.
	Limit int64
}

func (e *TooLargeError) Error() string { return fmt.Sprintf("file exceeds %d bytes", e.Limit) }
func (e *TooLargeError) Unwrap() error { return ErrTooLarge }

// FieldProblems names the file.
func (e *TooLargeError) FieldProblems() []invalid.Field {
	return []invalid.Field{{Name: "file", Problem: "larger than the maximum file size"}}
}

// QuotaError refuses a file larger than what is left of its workspace's
// quota. It unwraps to ErrQuotaExceeded; its fields are safe to show the
// workspace's keys.
type QuotaError struct {
	Limit     int64 // the workspace's quota in bytes
	Available int64 // what was left of it for this upload
}

func (e *QuotaError) Error() string {
	return fmt.Sprintf("%v: the file is larger than the %d bytes left of the %d-byte quota", ErrQuotaExceeded, e.Available, e.Limit)
}

// Unwrap returns ErrQuotaExceeded.
func (e *QuotaError) Unwrap() error { return ErrQuotaExceeded }

// limitReader fails with *TooLargeError as soon as more than limit bytes
// arrive, wherever in the stream that happens; or, when quota is set, with
// ErrQuotaExceeded once more than the left bytes reserved for it arrive.
type limitReader struct {
	r     io.Reader
	left  int64 // starts at limit, or at the reservation when quota
	limit int64
	quota bool
	// reserved and quotaLimit describe the quota refusal.
	reserved, quotaLimit int64
}

func (l *limitReader) Read(p []byte) (int, error) {
	if l.left < 0 {
		return 0, l.exceeded()
	}
	if int64(len(p)) > l.left+1 {
		p = p[:l.left+1] // one byte past the limit is enough to know
	}
	n, err := l.r.Read(p)
	l.left -= int64(n)
	if l.left < 0 {
		return 0, l.exceeded()
	}
	return n, err
}

func (l *limitReader) exceeded() error {
	if l.quota {
		return &QuotaError{Limit: l.quotaLimit, Available: l.reserved}
	}
	return &TooLargeError{Limit: l.limit}
}

// leaseReader stops a transfer at its next read once the upload's lease is
// lost: a destination that does not watch its context still stops.
type leaseReader struct {
	r io.Reader
	l *lease
}

func (r *leaseReader) Read(p []byte) (int, error) {
	if err := r.l.lost(); err != nil {
		return 0, err
	}
	return r.r.Read(p)
}

// countingReader counts what passes through. Nothing hashes the bytes: a
// digest was half an upload's CPU and served only as the ETag, which
// the file id serves as well.
type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}
