package files

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/aigateway/gateway/internal/invalid"
)

// Errors of the resumable upload store.
var (
	// ErrUploadNotFound: no such upload in the workspace. Another user's
	// or another workspace's upload is this too.
	ErrUploadNotFound = errors.New("upload not found")
	// ErrTooManyPending: the workspace holds its most pending uploads.
	ErrTooManyPending = errors.New("too many pending uploads in the workspace")
	// ErrPartsExceedUpload: the parts stored would pass the upload's
	// declared bytes, or its most parts.
	ErrPartsExceedUpload = errors.New("the parts would exceed the upload")
	// ErrUploadNotPending: the upload was completed, cancelled or has
	// expired; see *UploadStateError for which.
	ErrUploadNotPending = errors.New("upload is not pending")
)

// UploadStatus is where an upload is in its life.
type UploadStatus string

// Upload statuses. Only a pending upload takes parts, completes or cancels;
// the three others are final.
const (
	UploadPending   UploadStatus = "pending"
	UploadCompleted UploadStatus = "completed"
	UploadCancelled UploadStatus = "cancelled"
	UploadExpired   UploadStatus = "expired"
)

// UploadStateError refuses an operation on an upload that is no longer
// pending, naming its status. It unwraps to ErrUploadNotPending.
type UploadStateError struct{ Status UploadStatus }

func (e *UploadStateError) Error() string { return fmt.Sprintf("upload is %s", e.Status) }

// FieldProblems names the status, which the client must see to know what
// happened to its upload.
func (e *UploadStateError) FieldProblems() []invalid.Field {
	return []invalid.Field{{Name: "status", Problem: fmt.Sprintf("the upload is %s, not pending", e.Status)}}
}

// Unwrap returns ErrUploadNotPending.
func (e *UploadStateError) Unwrap() error { return ErrUploadNotPending }

// UploadRowRetention is how long the row of an upload no longer pending
// is kept past its ExpiresAt, so GET /uploads/{id} still answers it; then
// the sweeper deletes it (its file, if any, stays).
const UploadRowRetention = 7 * 24 * time.Hour

// UploadRecord is the row of a resumable upload.
type UploadRecord struct {
	ID          string // "upload_" and an opaque id
	WorkspaceID string
	KeyID       string
	Filename    string
	MimeType    string // as declared
	Purpose     Purpose
	Bytes       int64 // declared at creation; the parts must add up to it
	Status      UploadStatus
	CreatedAt   time.Time
	// ExpiresAt is when a pending upload expires, and when its quota
	// reservation lapses.
	ExpiresAt time.Time
	// ReservationID is the quota reservation holding Bytes while pending.
	ReservationID string
	// FileID is the file made at completion; empty before.
	FileID string
}

// UploadPart is a stored part of an upload. Its bytes are the object
// ObjectKey in the bucket.
type UploadPart struct {
	ID        string // "part_" and an opaque id
	UploadID  string
	Bytes     int64
	ObjectKey string
	CreatedAt time.Time
	// Text is what the part's bytes say about the file being text: a
	// sniff.PieceSummary as a string, or "" when they cannot be text.
	Text string
}

// PartsTally counts the parts an upload holds.
type PartsTally struct {
	Count int
	Bytes int64
}

// UploadIdempotency names an upload creation that a retry with the same
// Idempotency-Key replays.
type UploadIdempotency struct {
	UserID      string
	Key         string
	RequestHash string // hex SHA-256 of the canonical request
}

// UploadStore persists resumable uploads and their parts. Every method
// taking a workspace id finds uploads of that workspace only: an id of
// another workspace is ErrUploadNotFound. Implementations are safe for
// concurrent use; each method is one transaction.
type UploadStore interface {
	// CreateUpload inserts u (pending) and reserves u.Bytes of its
	// workspace's quota of quota bytes until u.ExpiresAt, in one
	// transaction; it sets u.ReservationID. An error wrapping
	// ErrQuotaExceeded when the bytes do not fit; ErrTooManyPending when the
	// workspace already has maxPending unexpired pending uploads;
	// workspace.ErrNotFound when the workspace is gone.
	//
	// With idem set, an upload created by the same user with the same key
	// in the last workspace.IdempotencyTTL is returned instead (created false) and
	// nothing is made; the caller compares the request hashes. Concurrent
	// calls with one key create at most one upload.
	CreateUpload(ctx context.Context, u UploadRecord, quota int64, maxPending int, idem *UploadIdempotency) (got UploadRecord, requestHash string, created bool, err error)

	// Upload returns the upload id of workspaceID and its parts in the
	// order they were stored. A pending upload past its ExpiresAt is
	// answered expired.
	Upload(ctx context.Context, workspaceID, id string) (UploadRecord, []UploadPart, error)

	// UploadTally returns the upload id of workspaceID, as Upload does,
	// with how many parts it holds and their bytes, without reading the
	// parts: what deciding whether one more part may come needs.
	UploadTally(ctx context.Context, workspaceID, id string) (UploadRecord, PartsTally, error)

	// AddPart records p, stored in the bucket, if its upload is pending
	// and unexpired, holds fewer than maxParts parts, and its parts' bytes
	// with p's do not pass its Bytes. Errors: ErrUploadNotFound, a
	// *UploadStateError, ErrPartsExceedUpload. On an error the caller
	// removes p's object.
	AddPart(ctx context.Context, workspaceID string, p UploadPart, maxParts int) error

	// CompleteUpload makes rec, the file assembled from the upload's parts,
	// in one transaction: the upload must be pending and unexpired; it
	// becomes completed with FileID rec.ID, rec is inserted, and the
	// upload's reservation is released, rec's size replacing it. Errors:
	// ErrUploadNotFound, a *UploadStateError (of two racing completions one
	// wins, the other gets completed). The part rows stay, for
	// RemovableParts.
	CompleteUpload(ctx context.Context, workspaceID, uploadID string, rec Record) error

	// CancelUpload makes a pending upload cancelled and releases its
	// reservation, and returns it. Errors: ErrUploadNotFound, a
	// *UploadStateError. Its parts become RemovableParts.
	CancelUpload(ctx context.Context, workspaceID, id string) (UploadRecord, error)

	// ExpireUploads makes at most limit pending uploads past their
	// ExpiresAt expired, releasing their reservations, and says how many.
	ExpireUploads(ctx context.Context, limit int) (int, error)

	// RemovableParts returns at most limit parts of uploads that are no
	// longer pending: their objects may be deleted, then DeleteParts.
	RemovableParts(ctx context.Context, limit int) ([]UploadPart, error)

	// DeleteParts removes the rows of the parts ids; missing ones are
	// ignored.
	DeleteParts(ctx context.Context, ids []string) error

	// KnownParts returns which of objectKeys are the object of a part row.
	KnownParts(ctx context.Context, objectKeys []string) (map[string]bool, error)
}
