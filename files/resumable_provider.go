package files

import (
	"cmp"
	"context"
	"crypto/md5"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/aigateway/gateway/workspace"
)

// Resumable uploads forwarded to a provider (provider=openai): the
// provider's own Uploads resource holds the parts and joins them, with the
// workspace's stored key, as POST /files?provider=openai sends a file.
//
// The gateway keeps the upload's row all the same, in the store of its own
// uploads, marked with the provider's name and under the provider's upload
// id: the row is what scopes the id to its workspace (another workspace's
// id is not found, whatever key the provider would take it with), holds
// the quota reservation of the declared bytes while the upload is pending
// (released at cancel or expiry like a native one's), and at completion
// becomes the file's record, backend the provider and object the
// provider's file id, so the file is listed, read, deleted and charged like
// any file sent to the provider whole. The parts are not recorded: the
// provider holds them, and checks at completion what the gateway checks of
// its own parts (the sum, each part once, the md5).

// UploadProvider is a provider's Uploads resource with one workspace's key
// bound in: the Provider an Opener returns implements it when the provider
// has one. Errors are those of Provider.Upload; a refusal of the caller's
// request (a 4xx other than 401, 403 and 429) wraps ErrProviderRejected, a
// 429 is a *RateLimitedError, and an error may carry a Metadata() map
// safe to show the client (the provider's status and request id).
type UploadProvider interface {
	// CreateUpload makes a pending upload at the provider.
	CreateUpload(ctx context.Context, r ProviderUploadRequest) (ProviderUpload, error)
	// AddUploadPart streams data, read once to EOF, as a part of the
	// provider's upload id; data's own error is returned wrapped.
	AddUploadPart(ctx context.Context, id string, data io.Reader) (ProviderUploadPart, error)
	// CompleteUpload joins partIDs, in order, into the upload's file; md5
	// ("" for none) must match. The answer's File is set.
	CompleteUpload(ctx context.Context, id string, partIDs []string, md5 string) (ProviderUpload, error)
	// CancelUpload cancels the provider's pending upload id.
	CancelUpload(ctx context.Context, id string) (ProviderUpload, error)
}

// ProviderUploadRequest is an upload to make at the provider.
type ProviderUploadRequest struct {
	Bytes    int64
	Filename string
	MimeType string
	Purpose  Purpose
}

// ProviderUpload is the provider's description of one of its uploads.
type ProviderUpload struct {
	ID        string
	ExpiresAt time.Time
	// File is the file made at completion; nil before.
	File *ProviderFileInfo
}

// ProviderUploadPart is a part the provider stored.
type ProviderUploadPart struct {
	ID        string
	CreatedAt time.Time
}

// ForwardedUploadStore is an UploadStore that also keeps uploads forwarded
// to a provider, marked with the provider's name. Resumable forwards
// uploads only when its store is one.
type ForwardedUploadStore interface {
	UploadStore
	// CreateForwardedUpload is CreateUpload for an upload forwarded to
	// provider: u.ID is the provider's upload id.
	CreateForwardedUpload(ctx context.Context, u UploadRecord, provider string, quota int64, maxPending int, idem *UploadIdempotency) (got UploadRecord, requestHash string, created bool, err error)
	// UploadBackend returns the provider an upload of workspaceID was
	// forwarded to, "" for one the gateway stores itself.
	// ErrUploadNotFound when there is no such upload.
	UploadBackend(ctx context.Context, workspaceID, id string) (string, error)
}

// errNoUploadsResource refuses a provider without an Uploads resource.
var errNoUploadsResource = fmt.Errorf("%w: %w", ErrUnknownProvider,
	paramError("provider", "anthropic has no uploads resource: send the upload without provider, or with provider=openai"))

// forwarding returns the store of forwarded uploads, or the refusal of a
// provider that cannot take one.
func (u *Resumable) forwarding(provider string) (ForwardedUploadStore, error) {
	if provider == ProviderAnthropic {
		return nil, errNoUploadsResource
	}
	if !IsProvider(provider) {
		return nil, fmt.Errorf("%w: %w", ErrUnknownProvider, paramError("provider", "must be openai or anthropic"))
	}
	store, ok := u.store.(ForwardedUploadStore)
	if !ok {
		return nil, fmt.Errorf("%w: %w", ErrUnknownProvider, paramError("provider", "uploads in parts are not forwarded by this gateway"))
	}
	return store, nil
}

// uploadProvider opens the workspace's key for provider, as an upload
// through POST /files does, and returns its Uploads resource.
func (u *Resumable) uploadProvider(ctx context.Context, ws, provider, keyID string) (UploadProvider, error) {
	p, err := openProvider(ctx, u.files.keys, u.files.opener, ws, provider, keyID)
	if err != nil {
		return nil, err
	}
	up, ok := p.(UploadProvider)
	if !ok {
		return nil, errNoUploadsResource
	}
	return up, nil
}

// createForwarded makes the upload at the provider, then its row, which
// reserves the declared bytes and counts against the pending limit as a
// native upload's does. When the row is refused, or an idempotent retry
// finds the upload made first, the provider's new upload is cancelled.
func (u *Resumable) createForwarded(ctx context.Context, c CreateUpload) (UploadRecord, error) {
	store, err := u.forwarding(c.Provider)
	if err != nil {
		return UploadRecord{}, err
	}
	ws, err := u.checkCreation(ctx, c)
	if err != nil {
		return UploadRecord{}, err
	}
	prov, err := u.uploadProvider(ctx, ws, c.Provider, c.Key.ID)
	if err != nil {
		return UploadRecord{}, err
	}
	purpose := cmp.Or(c.Purpose, DefaultPurpose)
	pu, err := prov.CreateUpload(ctx, ProviderUploadRequest{Bytes: c.Bytes, Filename: c.Filename, MimeType: c.MimeType, Purpose: purpose})
	if err != nil {
		return UploadRecord{}, forwardError(err)
	}
	now := u.files.now().UTC().Truncate(time.Microsecond)
	// The row, and the reservation with it, lasts as long as the provider
	// keeps the upload, and no longer than a native one.
	expires := now.Add(u.cfg.TTL)
	if pu.ExpiresAt.After(now) && pu.ExpiresAt.Before(expires) {
		expires = pu.ExpiresAt
	}
	rec := UploadRecord{
		ID: pu.ID, WorkspaceID: ws, KeyID: c.Key.ID, Filename: c.Filename, MimeType: c.MimeType,
		Purpose: purpose, Bytes: c.Bytes, Status: UploadPending, CreatedAt: now, ExpiresAt: expires,
	}
	got, hash, created, err := store.CreateForwardedUpload(ctx, rec, c.Provider, u.files.cfg.WorkspaceQuota, u.cfg.PendingPerWorkspace, c.Idempotency)
	if err != nil || !created {
		u.cancelAtProvider(ctx, prov, c.Provider, pu.ID)
	}
	switch {
	case errors.Is(err, ErrTooManyPending):
		return UploadRecord{}, &TooManyPendingError{Limit: u.cfg.PendingPerWorkspace}
	case errors.Is(err, workspace.ErrNotFound):
		return UploadRecord{}, fmt.Errorf("%w: %w", ErrWorkspaceForbidden, err)
	case err != nil:
		return UploadRecord{}, err
	case !created && (c.Idempotency == nil || hash != c.Idempotency.RequestHash):
		return UploadRecord{}, workspace.ErrIdempotencyMismatch
	}
	if created {
		u.files.log.Info("upload forwarded", slog.String("upload_id", got.ID), slog.String("provider", c.Provider),
			slog.String("workspace_id", ws), slog.String("key_id", c.Key.ID), slog.Int64("bytes", got.Bytes))
	}
	return got, nil
}

// cancelAtProvider undoes an upload made at the provider that the gateway
// will not keep, on a context that outlives the request but not by long.
// What fails expires at the provider within its hour, holding nothing of
// the workspace's quota.
func (u *Resumable) cancelAtProvider(ctx context.Context, prov UploadProvider, provider, id string) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	if _, err := prov.CancelUpload(ctx, id); err != nil {
		u.files.log.Warn("could not cancel a provider upload the gateway did not keep; it expires by itself",
			slog.String("provider", provider), slog.String("upload_id", id), slog.Any("error", err))
	}
}

// forwarded finds the forwarded upload ref names: its workspace, its row,
// and, when open is set, its provider's Uploads resource with the key the
// calling key would upload with. An upload the gateway stores itself is a
// 400 naming provider, not sent anywhere.
func (u *Resumable) forwarded(ctx context.Context, ref UploadRef, write, open bool) (string, UploadRecord, UploadProvider, error) {
	store, err := u.forwarding(ref.Provider)
	if err != nil {
		return "", UploadRecord{}, nil, err
	}
	ws, err := u.resolve(ctx, ref, write)
	if err != nil {
		return "", UploadRecord{}, nil, err
	}
	backend, err := store.UploadBackend(ctx, ws, ref.ID)
	if err != nil {
		return "", UploadRecord{}, nil, err
	}
	if backend != ref.Provider {
		return "", UploadRecord{}, nil, wrongDestination(backend)
	}
	rec, _, err := store.Upload(ctx, ws, ref.ID)
	if err != nil {
		return "", UploadRecord{}, nil, err
	}
	if !open {
		return ws, rec, nil, nil
	}
	if rec.Status != UploadPending {
		return "", UploadRecord{}, nil, &UploadStateError{Status: rec.Status}
	}
	prov, err := u.uploadProvider(ctx, ws, ref.Provider, ref.Key.ID)
	if err != nil {
		return "", UploadRecord{}, nil, err
	}
	return ws, rec, prov, nil
}

// wrongDestination refuses a request whose provider parameter names
// another destination than the one the upload was made for.
func wrongDestination(backend string) error {
	if backend == "" {
		return paramError("provider", "the upload is stored by the gateway: send its requests without provider")
	}
	return paramError("provider", "the upload was forwarded to "+backend+": send its requests with provider="+backend)
}

// checkNative refuses, on a route without provider, an upload that was
// forwarded to a provider.
func (u *Resumable) checkNative(ctx context.Context, ws, id string) error {
	store, ok := u.store.(ForwardedUploadStore)
	if !ok {
		return nil
	}
	backend, err := store.UploadBackend(ctx, ws, id)
	if err != nil {
		return err
	}
	if backend != "" {
		return wrongDestination(backend)
	}
	return nil
}

// getForwarded refuses GET /uploads/{id} with a provider, naming it.
// The route exists so that a client that lost its answers can resume,
// which needs the parts stored so far; OpenAI keeps a forwarded upload's
// parts and has no route that lists them (nor one describing an upload),
// so an answer could only claim no parts, and tell the client to send
// them all again. The file a completion made is found as any of the
// provider's files is, with GET /files?provider=openai.
func (u *Resumable) getForwarded(ref UploadRef) (UploadState, error) {
	if _, err := u.forwarding(ref.Provider); err != nil {
		return UploadState{}, err
	}
	return UploadState{}, paramError("provider", "OpenAI lists no upload's parts: an upload forwarded to it is not described here; its file, once completed, is listed by GET /files?provider=openai")
}

// addForwardedPart streams one part to the provider under the part size
// limit and the upload's declared bytes, and the shared limits of uploads.
// A part the form refuses after its data (rest) was already stored at the
// provider; its id is never given out, so it is never completed.
func (u *Resumable) addForwardedPart(ctx context.Context, ref UploadRef, body io.Reader, declared int64, rest func() error) (UploadPart, error) {
	ws, rec, prov, err := u.forwarded(ctx, ref, true, true)
	if err != nil {
		return UploadPart{}, err
	}
	u.files.inflight.Add(1)
	defer u.files.inflight.Done()
	release, err := u.admitPart(ctx, ref.Key.ID, ws, declared)
	if err != nil {
		return UploadPart{}, err
	}
	sent := int64(0)
	defer func() { release(sent) }()

	counted := &countingReader{r: &partLimit{r: body, max: u.cfg.MaxPartBytes, left: rec.Bytes}}
	pp, err := prov.AddUploadPart(ctx, rec.ID, counted)
	if err != nil {
		return UploadPart{}, forwardError(err)
	}
	if counted.n == 0 {
		return UploadPart{}, paramError("data", "is empty")
	}
	if err := rest(); err != nil {
		return UploadPart{}, err
	}
	sent = counted.n
	return UploadPart{ID: pp.ID, UploadID: rec.ID, Bytes: counted.n, CreatedAt: pp.CreatedAt.UTC().Truncate(time.Microsecond)}, nil
}

// completeForwarded has the provider join the parts, then makes the file's
// record from the upload's row, releasing its reservation. When the record
// cannot be made, the provider's file is deleted: nothing is kept that the
// workspace is not charged for.
func (u *Resumable) completeForwarded(ctx context.Context, c CompleteUpload) (UploadState, error) {
	if c.MD5 != "" {
		if b, err := hex.DecodeString(c.MD5); err != nil || len(b) != md5.Size {
			return UploadState{}, paramError("md5", "must be 32 hexadecimal digits")
		}
	}
	if len(c.PartIDs) == 0 {
		return UploadState{}, paramError("part_ids", "must list the upload's parts")
	}
	ws, rec, prov, err := u.forwarded(ctx, c.Ref, true, true)
	if err != nil {
		return UploadState{}, err
	}
	u.files.inflight.Add(1)
	defer u.files.inflight.Done()
	pu, err := prov.CompleteUpload(ctx, rec.ID, c.PartIDs, c.MD5)
	if err != nil {
		return UploadState{}, forwardError(err)
	}
	if pu.File == nil || pu.File.ID == "" || pu.File.Size != rec.Bytes {
		// The provider's file is what the workspace is charged for: one
		// that is not the upload's declared bytes is not recorded (nor
		// kept), and the answer is the provider's fault, not the client's.
		var answered int64 = -1
		if pu.File != nil {
			answered = pu.File.Size
			if pu.File.ID != "" {
				u.deleteAtProvider(ctx, ws, c.Ref, pu.File.ID)
			}
		}
		u.files.log.Error("provider completed an upload without a file of the declared bytes",
			slog.String("upload_id", rec.ID), slog.String("provider", c.Ref.Provider),
			slog.Int64("declared", rec.Bytes), slog.Int64("answered", answered))
		return UploadState{}, fmt.Errorf("%w: the completed file holds %d bytes, the upload declared %d", ErrProvider, answered, rec.Bytes)
	}
	file := Record{
		ID: pu.File.ID, WorkspaceID: ws, KeyID: c.Ref.Key.ID, Filename: rec.Filename, MimeType: mediaType(rec.MimeType),
		Size: pu.File.Size, Backend: c.Ref.Provider, ObjectKey: pu.File.ID, Purpose: cmp.Or(rec.Purpose, DefaultPurpose),
		CreatedAt: u.files.now().UTC().Truncate(time.Microsecond),
	}
	if err := u.store.CompleteUpload(ctx, ws, rec.ID, file); err != nil {
		u.deleteAtProvider(ctx, ws, c.Ref, file.ObjectKey)
		return UploadState{}, err
	}
	u.files.log.Info("forwarded upload completed", slog.String("upload_id", rec.ID), slog.String("file_id", file.ID),
		slog.String("provider", file.Backend), slog.String("workspace_id", ws), slog.Int("parts", len(c.PartIDs)),
		slog.Int64("size", file.Size))
	rec.Status, rec.FileID = UploadCompleted, file.ID
	return UploadState{Upload: rec, File: &file}, nil
}

// deleteAtProvider removes a provider file the gateway made no record of.
func (u *Resumable) deleteAtProvider(ctx context.Context, ws string, ref UploadRef, id string) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	p, err := openProvider(ctx, u.files.keys, u.files.opener, ws, ref.Provider, ref.Key.ID)
	if err == nil {
		err = p.Delete(ctx, id)
	}
	if err != nil && !errors.Is(err, ErrNotFound) {
		// Left behind: say exactly what, so it can be removed by hand.
		u.files.log.Error("could not remove the provider file of a forwarded upload that was not recorded",
			slog.String("provider", ref.Provider), slog.String("file_id", id), slog.String("workspace_id", ws),
			slog.Any("error", err))
	}
}

// cancelForwarded cancels the upload at the provider, then its row, which
// releases its reservation. A provider that refuses or fails leaves the
// upload pending here too, so the cancel can be sent again.
func (u *Resumable) cancelForwarded(ctx context.Context, ref UploadRef) (UploadRecord, error) {
	ws, rec, prov, err := u.forwarded(ctx, ref, true, true)
	if err != nil {
		return UploadRecord{}, err
	}
	if _, err := prov.CancelUpload(ctx, rec.ID); err != nil {
		return UploadRecord{}, forwardError(err)
	}
	return u.store.CancelUpload(ctx, ws, ref.ID)
}

// forwardError classifies a failure of a call to the provider's Uploads
// resource. The bound provider has named the provider's own failures and
// refusals; anything else is the part's body (cut off, too large) or the
// caller's context, returned as is, except a deadline, which is the
// provider's slowness.
func forwardError(err error) error {
	switch {
	case errors.Is(err, ErrProvider), errors.Is(err, ErrProviderTimeout), errors.Is(err, ErrProviderRejected),
		errors.Is(err, ErrProviderRateLimited):
		return err
	case errors.Is(err, context.DeadlineExceeded):
		return fmt.Errorf("%w: %w", ErrProviderTimeout, err)
	}
	return err
}
