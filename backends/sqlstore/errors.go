package sqlstore

import (
	"errors"
	"fmt"

	"github.com/aigateway/gateway/files"
)

// Errors of the store itself. Domain outcomes are reported with the domain
// packages' sentinels (workspace.ErrSlugTaken, files.ErrQuotaExceeded, ...);
// these cover what no domain package names. All of them mean a caller or
// operator mistake, never something a client caused, so the HTTP layer
// treats them as internal errors.
var (
	// ErrUnknownDriver: Open was given a driver other than "sqlite" or "postgres".
	ErrUnknownDriver = errors.New("sqlstore: unknown driver")
	// ErrUserNotFound: a key or workspace named a user that EnsureUser never
	// recorded.
	ErrUserNotFound = errors.New("sqlstore: user not found")
	// ErrConflict: a row with this primary key already exists (a key id,
	// workspace id or file id was reused).
	ErrConflict = errors.New("sqlstore: row already exists")
	// ErrInvalidArgument: a value the schema cannot hold (a workspace id that
	// is not a UUID, an unknown role, a negative size, ...).
	ErrInvalidArgument = errors.New("sqlstore: invalid argument")
)

// QuotaError says by how much a reservation would pass a workspace's
// storage quota. It unwraps to files.ErrQuotaExceeded; Metadata is safe to
// show to the workspace's owner.
type QuotaError struct {
	Limit     int64 // the quota in bytes
	Stored    int64 // bytes of stored files
	Reserved  int64 // bytes held by other uploads in flight
	Requested int64 // bytes this reservation asked for
}

func (e *QuotaError) Error() string {
	return fmt.Sprintf("%v: %d stored + %d reserved + %d requested > %d",
		files.ErrQuotaExceeded, e.Stored, e.Reserved, e.Requested, e.Limit)
}

// Unwrap returns files.ErrQuotaExceeded.
func (e *QuotaError) Unwrap() error { return files.ErrQuotaExceeded }

// Metadata is the detail shown to the client.
func (e *QuotaError) Metadata() map[string]any {
	return map[string]any{
		"limit_bytes":     e.Limit,
		"stored_bytes":    e.Stored,
		"reserved_bytes":  e.Reserved,
		"requested_bytes": e.Requested,
	}
}

func invalidf(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrInvalidArgument}, args...)...)
}
