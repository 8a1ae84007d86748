package files

import (
	"bytes"
	"context"
	"crypto/md5"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"strings"
	"time"

	"github.com/aigateway/gateway/files/blob"
	"github.com/aigateway/gateway/files/sniff"
	"github.com/aigateway/gateway/internal/invalid"
	"github.com/aigateway/gateway/internal/outage"
	"github.com/aigateway/gateway/policy/keys"
	"github.com/aigateway/gateway/workspace"
)

// ResumableConfig are the limits of resumable uploads.
type ResumableConfig struct {
	MaxBytes            int64         // the largest upload; default 8 GiB
	MaxPartBytes        int64         // the largest part; default 64 MiB
	MaxParts            int           // parts per upload; default 10,000
	TTL                 time.Duration // how long an upload may stay pending; default 1 h
	PendingPerWorkspace int           // pending uploads a workspace may hold; default 100
}

// Defaults of ResumableConfig.
const (
	DefaultUploadMaxBytes       = 8 << 30
	DefaultUploadMaxPartBytes   = 64 << 20
	DefaultUploadMaxParts       = 10_000
	DefaultUploadTTL            = time.Hour
	DefaultUploadsPerWorkspace  = 100
	partObjectPrefix            = "up/"
	removeAfterCompleteDeadline = time.Minute
)

// Resumable runs resumable uploads: a file sent in parts, in any order and
// to any replica, and assembled in storage at completion. Parts are stored
// as objects of their own as they arrive; completion composes them into the
// file's object without passing the bytes back through the gateway where
// the backend can, and makes the file an ordinary record. It shares the
// upload Service's workspaces, quota, bucket and shared limits.
type Resumable struct {
	cfg   ResumableConfig
	files *Service
	store UploadStore
}

// NewResumable returns the resumable uploads of the upload service s.
func NewResumable(cfg ResumableConfig, s *Service, store UploadStore) *Resumable {
	if cfg.MaxBytes <= 0 {
		cfg.MaxBytes = DefaultUploadMaxBytes
	}
	if cfg.MaxPartBytes <= 0 {
		cfg.MaxPartBytes = DefaultUploadMaxPartBytes
	}
	if cfg.MaxParts <= 0 {
		cfg.MaxParts = DefaultUploadMaxParts
	}
	if cfg.TTL <= 0 {
		cfg.TTL = DefaultUploadTTL
	}
	if cfg.PendingPerWorkspace <= 0 {
		cfg.PendingPerWorkspace = DefaultUploadsPerWorkspace
	}
	return &Resumable{cfg: cfg, files: s, store: store}
}

// Config returns the limits in force, defaults filled in.
func (u *Resumable) Config() ResumableConfig { return u.cfg }

// PartObjectKey is where part partID of upload uploadID of workspace
// workspaceID is stored: under its own prefix, apart from files, so the
// sweeper of files never takes a part for an orphaned file.
func PartObjectKey(workspaceID, uploadID, partID string) string {
	return partObjectPrefix + workspaceID + "/" + uploadID + "/" + partID
}

// PartObjectPrefix is the part of the bucket holding upload parts.
const PartObjectPrefix = partObjectPrefix

// CreateUpload is what POST /uploads asks for.
type CreateUpload struct {
	Key         *keys.APIKey
	WorkspaceID string // the workspace_id parameter; "" is the key's
	Bytes       int64
	Filename    string
	MimeType    string
	Purpose     Purpose
	// Idempotency, when set, makes a retry answer the upload made first.
	Idempotency *UploadIdempotency
	// Provider is the provider parameter: "" stores the upload here;
	// openai forwards it to OpenAI's Uploads resource with the workspace's
	// stored key (resumable_provider.go).
	Provider string
}

// Create starts an upload, reserving its bytes of the workspace's quota
// at once. Errors: keys.ErrReadOnlyKey; ErrInvalidWorkspaceID,
// ErrWorkspaceForbidden; a *ParamError for bytes, filename or mime_type;
// a *QuotaError; ErrTooManyPending; workspace.ErrIdempotencyMismatch.
func (u *Resumable) Create(ctx context.Context, c CreateUpload) (UploadRecord, error) {
	if c.Provider != "" {
		return u.createForwarded(ctx, c)
	}
	ws, err := u.checkCreation(ctx, c)
	if err != nil {
		return UploadRecord{}, err
	}
	now := u.files.now().UTC().Truncate(time.Microsecond)
	rec := UploadRecord{
		ID: "upload_" + newOpaqueID(), WorkspaceID: ws, KeyID: c.Key.ID, Filename: c.Filename,
		MimeType: c.MimeType, Purpose: c.Purpose, Bytes: c.Bytes, Status: UploadPending,
		CreatedAt: now, ExpiresAt: now.Add(u.cfg.TTL),
	}
	got, hash, created, err := u.store.CreateUpload(ctx, rec, u.files.cfg.WorkspaceQuota, u.cfg.PendingPerWorkspace, c.Idempotency)
	if errors.Is(err, ErrTooManyPending) {
		return UploadRecord{}, &TooManyPendingError{Limit: u.cfg.PendingPerWorkspace}
	}
	if errors.Is(err, workspace.ErrNotFound) {
		return UploadRecord{}, fmt.Errorf("%w: %w", ErrWorkspaceForbidden, err)
	}
	if err != nil {
		return UploadRecord{}, err
	}
	if !created && (c.Idempotency == nil || hash != c.Idempotency.RequestHash) {
		return UploadRecord{}, workspace.ErrIdempotencyMismatch
	}
	if created {
		u.files.log.Info("upload created", slog.String("upload_id", got.ID), slog.String("workspace_id", ws),
			slog.String("key_id", c.Key.ID), slog.Int64("bytes", got.Bytes))
	}
	return got, nil
}

// checkCreation checks what every creation needs, native or forwarded: a
// key that may upload, the workspace it acts in (returned), and the
// declared bytes, filename and type.
func (u *Resumable) checkCreation(ctx context.Context, c CreateUpload) (string, error) {
	if c.Key.Role == keys.RoleService {
		return "", keys.ErrReadOnlyKey
	}
	ws, err := resolveWorkspace(ctx, u.files.workspaces, c.Key, c.WorkspaceID)
	if err != nil {
		return "", err
	}
	if c.Bytes < 1 || c.Bytes > u.cfg.MaxBytes {
		return "", paramError("bytes", fmt.Sprintf("must be from 1 to %d", u.cfg.MaxBytes))
	}
	if err := ValidateFilename(c.Filename); err != nil {
		return "", err
	}
	if _, _, err := mime.ParseMediaType(c.MimeType); err != nil {
		return "", paramError("mime_type", "must be a media type such as application/pdf")
	}
	return ws, nil
}

// UploadRef names an upload as a route does: by id, in the workspace the
// calling key acts in.
type UploadRef struct {
	Key         *keys.APIKey
	WorkspaceID string // the workspace_id parameter
	ID          string
	// Provider is the provider parameter: it must name where the upload
	// was made, "" for the gateway's own storage.
	Provider string
}

// resolve finds the workspace of ref. An upload in a workspace the key may
// not use is not found, exactly as an unknown one, so ids cannot be probed.
func (u *Resumable) resolve(ctx context.Context, ref UploadRef, write bool) (string, error) {
	if write && ref.Key.Role == keys.RoleService {
		return "", keys.ErrReadOnlyKey
	}
	ws, err := resolveWorkspace(ctx, u.files.workspaces, ref.Key, ref.WorkspaceID)
	if errors.Is(err, ErrWorkspaceForbidden) {
		return "", ErrUploadNotFound
	}
	return ws, err
}

// UploadState is an upload as GET /uploads/{id} shows it.
type UploadState struct {
	Upload UploadRecord
	Parts  []UploadPart
	// File is the file made at completion, nil before (or once deleted).
	File *Record
}

// Get returns an upload, its parts and its file.
func (u *Resumable) Get(ctx context.Context, ref UploadRef) (UploadState, error) {
	if ref.Provider != "" {
		return u.getForwarded(ref)
	}
	ws, err := u.resolve(ctx, ref, false)
	if err != nil {
		return UploadState{}, err
	}
	if err := u.checkNative(ctx, ws, ref.ID); err != nil {
		return UploadState{}, err
	}
	rec, parts, err := u.store.Upload(ctx, ws, ref.ID)
	if err != nil {
		return UploadState{}, err
	}
	st := UploadState{Upload: rec, Parts: parts}
	if rec.FileID != "" {
		file, err := u.files.store.FileByID(ctx, ws, rec.FileID)
		switch {
		case err == nil:
			st.File = &file
		case !errors.Is(err, ErrNotFound):
			return UploadState{}, err
		}
	}
	return st, nil
}

// PartTooLargeError refuses a part over the part size limit. It unwraps to
// ErrTooLarge (413).
type PartTooLargeError struct{ Limit int64 }

func (e *PartTooLargeError) Error() string { return fmt.Sprintf("part exceeds %d bytes", e.Limit) }

// Unwrap returns ErrTooLarge.
func (e *PartTooLargeError) Unwrap() error { return ErrTooLarge }

// FieldProblems names the part.
func (e *PartTooLargeError) FieldProblems() []invalid.Field {
	return []invalid.Field{{Name: "data", Problem: fmt.Sprintf("a part may hold at most %d bytes", e.Limit)}}
}

// TooManyPendingError refuses an upload to a workspace holding its most
// pending uploads. It unwraps to ErrTooManyPending (429).
type TooManyPendingError struct{ Limit int }

func (e *TooManyPendingError) Error() string {
	return fmt.Sprintf("%v: at most %d", ErrTooManyPending, e.Limit)
}

// Unwrap returns ErrTooManyPending.
func (e *TooManyPendingError) Unwrap() error { return ErrTooManyPending }

// MaxPartBytes is the configured part limit.
func (u *Resumable) MaxPartBytes() int64 { return u.cfg.MaxPartBytes }

// AddPart streams one part of a pending upload to storage and records it.
// declared is the part's length when the request says it, else -1. A part
// that fails, is cut off, or is refused leaves nothing: it can be sent
// again. Errors: ErrUploadNotFound; *UploadStateError; *PartTooLargeError;
// ErrPartsExceedUpload (the parts would pass the upload's bytes, or its
// most parts); a *ParamError for an empty part; body's own error;
// ErrStorageUnavailable; rest's error. rest, called once the part's bytes
// are stored and before they are recorded, reads what the request holds
// after the part: the part is kept only if it succeeds.
func (u *Resumable) AddPart(ctx context.Context, ref UploadRef, body io.Reader, declared int64, rest func() error) (_ UploadPart, err error) {
	if ref.Provider != "" {
		return u.addForwardedPart(ctx, ref, body, declared, rest)
	}
	ws, err := u.resolve(ctx, ref, true)
	if err != nil {
		return UploadPart{}, err
	}
	if err := u.checkNative(ctx, ws, ref.ID); err != nil {
		return UploadPart{}, err
	}
	// The row's tally, not the parts: a part's cost must not grow with
	// the parts already stored (10,000 of them at most).
	rec, tally, err := u.store.UploadTally(ctx, ws, ref.ID)
	if err != nil {
		return UploadPart{}, err
	}
	if rec.Status != UploadPending {
		return UploadPart{}, &UploadStateError{Status: rec.Status}
	}
	if tally.Count >= u.cfg.MaxParts {
		return UploadPart{}, errTooManyParts(u.cfg.MaxParts)
	}
	left := rec.Bytes - tally.Bytes
	u.files.inflight.Add(1)
	defer u.files.inflight.Done()
	release, err := u.admitPart(ctx, ref.Key.ID, ws, declared)
	if err != nil {
		return UploadPart{}, err
	}
	stored := int64(0)
	defer func() { release(stored) }()

	part := UploadPart{
		ID: "part_" + newOpaqueID(), UploadID: rec.ID,
		CreatedAt: u.files.now().UTC().Truncate(time.Microsecond),
	}
	part.ObjectKey = PartObjectKey(ws, rec.ID, part.ID)
	limited := &partLimit{r: body, max: u.cfg.MaxPartBytes, left: left}
	// Each part is judged as text as it passes, so that completing a text
	// file needs only what the parts' edges hold, not their bytes again.
	var text sniff.Piece
	counted := &countingReader{r: io.TeeReader(limited, &text)}
	if _, err := u.files.bucket.Upload(ctx, part.ObjectKey, counted, -1, blob.UploadOptions{}); err != nil {
		return UploadPart{}, storageError(err)
	}
	part.Bytes = counted.n
	if summary, ok := text.Summary(); ok {
		part.Text = summary.String()
	}
	if part.Bytes == 0 {
		u.removeObjects(ctx, part.ObjectKey)
		return UploadPart{}, paramError("data", "is empty")
	}
	if err := rest(); err != nil {
		u.removeObjects(ctx, part.ObjectKey)
		return UploadPart{}, err
	}
	if err := u.store.AddPart(ctx, ws, part, u.cfg.MaxParts); err != nil {
		// Completed, cancelled or full since it was read: the part is not
		// kept, whatever came first. A row that may have been written
		// keeps its object; the sweeper removes it if no row names it.
		if !errors.Is(err, outage.ErrOutcomeUnknown) {
			u.removeObjects(ctx, part.ObjectKey)
		}
		if errors.Is(err, ErrPartsExceedUpload) && invalid.Fields(err) == nil {
			// Parts sent at once passed the check above together; the
			// store decided which one is too many.
			err = fmt.Errorf("%w: %w", err, paramError("data", "the parts stored with it would pass the upload's bytes or its most parts"))
		}
		return UploadPart{}, err
	}
	stored = part.Bytes
	return part, nil
}

// admitPart applies the shared limits of uploads to a part of at most
// declared bytes (-1: unknown, so the most a part may hold), as an upload
// is admitted; release settles them with the bytes kept.
func (u *Resumable) admitPart(ctx context.Context, keyID, ws string, declared int64) (release func(int64), err error) {
	if u.files.admission == nil {
		return func(int64) {}, nil
	}
	budget := u.cfg.MaxPartBytes
	if declared >= 0 && declared < budget {
		budget = declared
	}
	return u.files.admission.Admit(ctx, keyID, ws, budget)
}

// errTooManyParts refuses a part to an upload holding its most parts.
func errTooManyParts(most int) error {
	return fmt.Errorf("%w: %w", ErrPartsExceedUpload, paramError("data", fmt.Sprintf("the upload holds its most parts, %d", most)))
}

// partLimit fails a part past the part size limit (*PartTooLargeError)
// or past what is left of its upload's bytes (ErrPartsExceedUpload), as
// soon as the first byte too many arrives.
type partLimit struct {
	r    io.Reader
	max  int64 // the part limit
	left int64 // what the upload still takes
	n    int64
}

func (l *partLimit) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	bound := min(l.max, l.left)
	if int64(len(p)) > bound-l.n+1 {
		p = p[:max(bound-l.n+1, 0)]
	}
	if len(p) == 0 {
		return 0, l.exceeded()
	}
	n, err := l.r.Read(p)
	l.n += int64(n)
	if l.n > bound {
		return 0, l.exceeded()
	}
	return n, err
}

func (l *partLimit) exceeded() error {
	if l.n > l.max || l.max <= l.left {
		return &PartTooLargeError{Limit: l.max}
	}
	return fmt.Errorf("%w: %w", ErrPartsExceedUpload, paramError("data", fmt.Sprintf("the upload takes %d more bytes", l.left)))
}

// CompleteUpload is what POST /uploads/{id}/complete asks for.
type CompleteUpload struct {
	Ref     UploadRef
	PartIDs []string
	MD5     string // hex, or "" for no check
}

// Complete assembles the parts in the order listed into the upload's file,
// checks it as an upload is checked (its type, and its md5 when given),
// and records it. On any refusal nothing is made and the upload stays
// pending. Errors: ErrUploadNotFound; *UploadStateError; a *ParamError for
// part_ids or md5; the content's sniff errors, or a *ParamError naming
// mime_type when the declared type contradicts the content;
// ErrStorageUnavailable.
func (u *Resumable) Complete(ctx context.Context, c CompleteUpload) (UploadState, error) {
	if c.Ref.Provider != "" {
		return u.completeForwarded(ctx, c)
	}
	ws, err := u.resolve(ctx, c.Ref, true)
	if err != nil {
		return UploadState{}, err
	}
	if err := u.checkNative(ctx, ws, c.Ref.ID); err != nil {
		return UploadState{}, err
	}
	if c.MD5 != "" {
		if b, err := hex.DecodeString(c.MD5); err != nil || len(b) != md5.Size {
			return UploadState{}, paramError("md5", "must be 32 hexadecimal digits")
		}
	}
	rec, parts, err := u.store.Upload(ctx, ws, c.Ref.ID)
	if err != nil {
		return UploadState{}, err
	}
	if rec.Status != UploadPending {
		return UploadState{}, &UploadStateError{Status: rec.Status}
	}
	listed, err := orderParts(parts, c.PartIDs, rec.Bytes)
	if err != nil {
		return UploadState{}, err
	}
	srcs := make([]string, len(listed))
	for i, p := range listed {
		srcs[i] = p.ObjectKey
	}
	u.files.inflight.Add(1)
	defer u.files.inflight.Done()

	fileID := newFileID()
	dst := ObjectKey(ws, fileID)
	if _, err := u.files.bucket.Compose(ctx, dst, srcs, blob.UploadOptions{ContentType: rec.MimeType}); err != nil {
		return UploadState{}, u.composeError(ctx, ws, rec.ID, err)
	}
	made := false
	defer func() {
		if !made {
			u.removeObjects(ctx, dst)
		}
	}()
	mimeType, err := u.check(ctx, dst, rec, listed, c.MD5)
	if err != nil {
		return UploadState{}, err
	}
	file := Record{
		ID: fileID, WorkspaceID: ws, KeyID: c.Ref.Key.ID, Filename: rec.Filename, MimeType: mimeType,
		Size: rec.Bytes, Backend: u.files.cfg.Backend, ObjectKey: dst, Purpose: rec.Purpose,
		CreatedAt: u.files.now().UTC().Truncate(time.Microsecond),
	}
	if file.Purpose == "" {
		file.Purpose = DefaultPurpose
	}
	if err := u.store.CompleteUpload(ctx, ws, rec.ID, file); err != nil {
		// The file's record may have been written: its object stays,
		// for the sweeper to remove if no record names it.
		made = errors.Is(err, outage.ErrOutcomeUnknown)
		return UploadState{}, err
	}
	made = true
	u.files.log.Info("upload completed", slog.String("upload_id", rec.ID), slog.String("file_id", fileID),
		slog.String("workspace_id", ws), slog.Int("parts", len(srcs)), slog.Int64("size", file.Size),
		slog.String("mime_type", mimeType))
	u.removeParts(ctx, parts)
	rec.Status, rec.FileID = UploadCompleted, fileID
	return UploadState{Upload: rec, File: &file}, nil
}

// composeError explains a failed assembly. Its parts were there when it
// began; one gone since means the upload was settled meanwhile (a racing
// completion removes the parts it used, a cancel all of them), and the
// answer is then the upload's new status, as the store would give it.
func (u *Resumable) composeError(ctx context.Context, ws, id string, err error) error {
	if !errors.Is(err, blob.ErrNotFound) {
		return storageError(err)
	}
	rec, _, lookErr := u.store.Upload(ctx, ws, id)
	switch {
	case lookErr != nil:
		return lookErr
	case rec.Status != UploadPending:
		return &UploadStateError{Status: rec.Status}
	}
	// Pending with a part's object missing: storage lost what it had
	// acknowledged. Nothing the client can mend; say so and keep it out
	// of the client's fault.
	u.files.log.Error("a stored part of a pending upload is missing from storage",
		slog.String("upload_id", id), slog.String("workspace_id", ws), slog.Any("error", err))
	return fmt.Errorf("%w: %w", ErrStorageUnavailable, err)
}

// orderParts returns the parts ids, in that order, checking that each is
// a part of the upload, listed once, and that they add up to bytes.
func orderParts(parts []UploadPart, ids []string, bytes int64) ([]UploadPart, error) {
	if len(ids) == 0 {
		return nil, paramError("part_ids", "must list the upload's parts")
	}
	byID := make(map[string]UploadPart, len(parts))
	for _, p := range parts {
		byID[p.ID] = p
	}
	seen := make(map[string]bool, len(ids))
	listed := make([]UploadPart, 0, len(ids))
	var sum int64
	for _, id := range ids {
		p, ok := byID[id]
		switch {
		case !ok:
			return nil, paramError("part_ids", "lists a part that is not one of this upload's")
		case seen[id]:
			return nil, paramError("part_ids", "lists a part more than once")
		}
		seen[id] = true
		listed = append(listed, p)
		sum += p.Bytes
	}
	if sum != bytes {
		return nil, paramError("part_ids", fmt.Sprintf("the parts listed hold %d bytes; the upload declared %d", sum, bytes))
	}
	return listed, nil
}

// check judges the assembled object as an upload's bytes are judged: its
// type from its first bytes, and text as a whole; and its md5 when one is
// given. Only the md5 needs the whole object read back: text is judged
// from what each part learned as it arrived (joinText). It returns the
// type detected.
func (u *Resumable) check(ctx context.Context, key string, rec UploadRecord, parts []UploadPart, wantMD5 string) (string, error) {
	if wantMD5 == "" {
		obj, err := u.files.bucket.OpenRange(ctx, key, 0, sniff.WindowLen)
		if err != nil {
			return "", storageError(err)
		}
		defer obj.Close()
		sr, err := u.sniff(obj, rec)
		if err != nil {
			return "", err
		}
		if sr.Text() {
			if err := joinText(parts); err != nil {
				return "", err
			}
		}
		return sr.MimeType(), nil
	}
	obj, err := u.files.bucket.Open(ctx, key)
	if err != nil {
		return "", storageError(err)
	}
	defer obj.Close()
	sum := md5.New()
	sr, err := u.sniff(io.TeeReader(obj, sum), rec)
	if err != nil {
		return "", err
	}
	if _, err := io.Copy(io.Discard, sr); err != nil {
		return "", storageError(err)
	}
	want, _ := hex.DecodeString(wantMD5)
	if !bytes.Equal(sum.Sum(nil), want) {
		return "", paramError("md5", "does not match the assembled file")
	}
	return sr.MimeType(), nil
}

// sniff decides the type of the file r begins, refusing one the gateway
// does not take or that contradicts the declared type. Given the first
// sniff.WindowLen bytes of a longer file, it reads no further than they go.
func (u *Resumable) sniff(r io.Reader, rec UploadRecord) (*sniff.Reader, error) {
	sr, err := sniff.NewReader(r, rec.Filename)
	if err != nil {
		return nil, storageError(err)
	}
	if !compatibleType(rec.MimeType, sr.MimeType()) {
		return nil, paramError("mime_type", fmt.Sprintf("declared %s, but the content is %s", mediaType(rec.MimeType), sr.MimeType()))
	}
	return sr, nil
}

// joinText checks that parts, in order, form text: each part's own bytes
// were judged as it arrived, and the runes cut between them are judged here.
func joinText(parts []UploadPart) error {
	pieces := make([]sniff.PieceSummary, len(parts))
	for i, p := range parts {
		s, err := sniff.ParsePieceSummary(p.Text)
		if err != nil {
			// The part's bytes cannot be text (or its row predates what
			// parts learn, which no stored part does).
			return &sniff.TypeError{Reason: "text is not valid UTF-8 or holds a control character", Offset: -1}
		}
		pieces[i] = s
	}
	return sniff.JoinPieces(pieces)
}

// mediaType is the type of a Content-Type value without its parameters,
// lower case.
func mediaType(v string) string {
	mt, _, err := mime.ParseMediaType(v)
	if err != nil {
		return strings.ToLower(strings.TrimSpace(v))
	}
	return mt
}

// compatibleType reports whether a declared type agrees with the detected
// one. Clients guess types from file names, and guess text subtypes
// differently (a .jsonl file is text/plain to one, application/jsonl to
// another), so any text declaration agrees with any text content, and a
// declaration of no particular type agrees with everything.
func compatibleType(declared, detected string) bool {
	d := mediaType(declared)
	switch {
	case d == detected, d == "application/octet-stream", d == "binary/octet-stream":
		return true
	case textual(d) && textual(detected):
		return true
	}
	return d == "audio/x-wav" && detected == sniff.MimeWAV || d == "audio/mp3" && detected == sniff.MimeMP3
}

func textual(t string) bool {
	return strings.HasPrefix(t, "text/") || t == "application/json" || t == "application/jsonl" ||
		t == "application/x-ndjson" || t == "application/x-jsonlines"
}

// Cancel makes a pending upload cancelled, releases its quota and removes
// its parts. Errors: ErrUploadNotFound; *UploadStateError.
func (u *Resumable) Cancel(ctx context.Context, ref UploadRef) (UploadRecord, error) {
	if ref.Provider != "" {
		return u.cancelForwarded(ctx, ref)
	}
	ws, err := u.resolve(ctx, ref, true)
	if err != nil {
		return UploadRecord{}, err
	}
	if err := u.checkNative(ctx, ws, ref.ID); err != nil {
		return UploadRecord{}, err
	}
	rec, err := u.store.CancelUpload(ctx, ws, ref.ID)
	if err != nil {
		return UploadRecord{}, err
	}
	_, parts, err := u.store.Upload(ctx, ws, ref.ID)
	if err == nil {
		u.removeParts(ctx, parts)
	}
	return rec, nil
}

// removeParts deletes the objects of parts, then their rows, on a context
// that outlives the request but not by long. What fails is left to the
// sweeper, which finds the parts of every upload no longer pending.
func (u *Resumable) removeParts(ctx context.Context, parts []UploadPart) {
	if len(parts) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), removeAfterCompleteDeadline)
	defer cancel()
	ids := make([]string, 0, len(parts))
	for _, p := range parts {
		if err := u.files.bucket.Delete(ctx, p.ObjectKey); err != nil {
			u.files.log.Warn("could not remove an upload part; the sweeper will", slog.String("object", p.ObjectKey), slog.Any("error", err))
			continue
		}
		ids = append(ids, p.ID)
	}
	if err := u.store.DeleteParts(ctx, ids); err != nil {
		u.files.log.Warn("could not forget removed upload parts; the sweeper will", slog.Int("parts", len(ids)), slog.Any("error", err))
	}
}

// removeObjects deletes objects this request made and will not keep.
func (u *Resumable) removeObjects(ctx context.Context, keys ...string) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	for _, k := range keys {
		if err := u.files.bucket.Delete(ctx, k); err != nil {
			u.files.log.Error("could not remove an object of a refused upload step; the sweeper will",
				slog.String("object", k), slog.Any("error", err))
		}
	}
}

// newOpaqueID returns 24 random characters (120 bits), the alphabet of file ids.
func newOpaqueID() string {
	var b [15]byte
	_, _ = rand.Read(b[:])
	return fileIDEncoding.EncodeToString(b[:])
}
