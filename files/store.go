package files

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Errors of the file store.
var (
	// ErrQuotaExceeded: the workspace's stored bytes plus the reservation
	// would pass its storage quota.
	ErrQuotaExceeded = errors.New("workspace storage quota exceeded")
	// ErrReservationNotFound: the reservation was already settled or expired.
	ErrReservationNotFound = errors.New("quota reservation not found")
	// ErrReservationLost: an upload's reservation could not be kept alive
	// (the store did not answer its renewals, or it was gone); the upload is
	// stopped and undone rather than run on without quota. It is
	// ErrStorageUnavailable too: the client may retry.
	ErrReservationLost = fmt.Errorf("%w: the upload's quota reservation could not be kept", ErrStorageUnavailable)
	// ErrNoProviderKey: the workspace stored no key for that provider.
	ErrNoProviderKey = errors.New("no key stored for this provider")
	// ErrNotFound: no such file record in the workspace.
	ErrNotFound = errors.New("file not found")
)

// Record is the metadata row of a stored file. It exists only once the
// bytes are durably stored.
type Record struct {
	ID          string
	WorkspaceID string
	KeyID       string
	Filename    string
	MimeType    string
	Size        int64
	Backend     string // fs | s3 | gcs | openai | anthropic
	ObjectKey   string // bucket key, or the provider's file id
	Purpose     Purpose
	CreatedAt   time.Time
}

// Reservation holds quota for an upload in flight.
type Reservation struct {
	ID          string
	WorkspaceID string
	Bytes       int64
	ExpiresAt   time.Time
}

// Store persists file records and enforces the per-workspace storage quota
// with reservations, so concurrent uploads cannot overshoot it: an upload
// reserves its largest possible size before streaming and settles after.
// Implementations are safe for concurrent use.
type Store interface {
	// Reserve sets aside bytes of workspaceID's quota of limit bytes for
	// ttl, atomically: stored + reserved + bytes <= limit, or
	// ErrQuotaExceeded. Expired reservations no longer count.
	Reserve(ctx context.Context, workspaceID string, bytes, limit int64, ttl time.Duration) (Reservation, error)
	// ReserveUpTo is Reserve of whatever is left of the quota, at most
	// bytes: for an upload whose size is unknown until its last byte.
	// ErrQuotaExceeded when nothing is left.
	ReserveUpTo(ctx context.Context, workspaceID string, bytes, limit int64, ttl time.Duration) (Reservation, error)
	// Renew extends every unexpired reservation of ids to expire ttl from
	// now, in one call, and returns the ids it extended; the others are gone
	// (settled, released or expired) and are not brought back.
	Renew(ctx context.Context, ids []string, ttl time.Duration) (renewed []string, err error)
	// Commit inserts rec and releases the reservation in one transaction, so
	// the record's size replaces the reserved bytes. ErrReservationNotFound
	// when it was already settled or expired (the upload must then be undone).
	Commit(ctx context.Context, res Reservation, rec Record) error
	// Release drops a reservation; releasing twice is harmless.
	Release(ctx context.Context, res Reservation) error
	// StoredBytes is the sum of the sizes of workspaceID's records.
	StoredBytes(ctx context.Context, workspaceID string) (int64, error)
	// FileByID returns a record of workspaceID, or ErrNotFound.
	FileByID(ctx context.Context, workspaceID, id string) (Record, error)
}

// ProviderKeys finds each workspace's own keys for BYOK providers, sealed
// (encrypted) by their owner: the store never sees a plaintext key.
type ProviderKeys interface {
	// ProviderKey returns the sealed key of workspaceID for provider that
	// the API key apiKeyID uses: the enabled one it may use with the lowest
	// sort order; ErrNoProviderKey when there is none.
	ProviderKey(ctx context.Context, workspaceID, provider, apiKeyID string) ([]byte, error)
}
