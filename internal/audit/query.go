package audit

import (
	"context"
	"encoding/base64"
	"errors"
	"strings"
	"time"
)

// DefaultRetention is how long entries are kept when the configuration
// does not say.
const DefaultRetention = 400 * 24 * time.Hour

// Page sizes of GET /audit.
const (
	DefaultLimit = 50
	MaxLimit     = 200
)

// Query selects one page of a user's entries, newest first.
type Query struct {
	UserID string // required: entries whose Actor.UserID is this user
	Target string // optional: exact target id
	Actor  string // optional: exact acting key hash
	Action Action // optional
	Since  time.Time
	// After, when set, continues a listing: entries strictly older than
	// the cursor's position.
	After *Cursor
	Limit int
}

// Cursor is the position of an entry in newest-first order.
type Cursor struct {
	At time.Time
	ID string
}

// ErrBadCursor: a cursor that this package did not make.
var ErrBadCursor = errors.New("audit: malformed cursor")

// Encode returns c as an opaque token.
func (c Cursor) Encode() string {
	return base64.RawURLEncoding.EncodeToString([]byte(c.At.UTC().Format(time.RFC3339Nano) + "|" + c.ID))
}

// DecodeCursor parses a token Encode made.
func DecodeCursor(s string) (Cursor, error) {
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return Cursor{}, ErrBadCursor
	}
	at, id, ok := strings.Cut(string(b), "|")
	if !ok || id == "" {
		return Cursor{}, ErrBadCursor
	}
	t, err := time.Parse(time.RFC3339Nano, at)
	if err != nil {
		return Cursor{}, ErrBadCursor
	}
	return Cursor{At: t.UTC(), ID: id}, nil
}

// Store reads and prunes the entries the metadata store writes.
type Store interface {
	// AuditEntries returns at most q.Limit entries matching q, newest
	// first (At, then ID, descending).
	AuditEntries(ctx context.Context, q Query) ([]Entry, error)
	// RecordAudit writes e on its own, for actions that change nothing
	// else in the store (a console sign-in). e.Actor is taken as given.
	RecordAudit(ctx context.Context, e Entry) error
	// PruneAudit deletes at most limit entries older than cutoff and
	// returns how many it deleted.
	PruneAudit(ctx context.Context, cutoff time.Time, limit int) (int, error)
}
