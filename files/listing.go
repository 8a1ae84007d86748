package files

import (
	"context"
	"time"
)

// Position is a place in a workspace's files in listing order: files are
// ordered by (CreatedAt, ID), so a position stays meaningful while files
// are added and removed around it.
type Position struct {
	CreatedAt time.Time
	ID        string
}

// ListQuery asks for one page of a workspace's records.
type ListQuery struct {
	WorkspaceID string
	// Limit is the page size (at least 1).
	Limit int
	// Ascending lists oldest first; the default is newest first.
	Ascending bool
	// After, when set, starts the page strictly after this position in the
	// page's order.
	After *Position
	// Purpose, when set, keeps only the files uploaded for it.
	Purpose Purpose
}

// RecordPage is one page of records, in the query's order.
type RecordPage struct {
	Records []Record
	// HasMore: more records follow the last one in the query's order.
	HasMore bool
}

// Records is the read and delete side of the file records. Implementations
// are safe for concurrent use.
type Records interface {
	// ListFiles returns one page of q.WorkspaceID's records by keyset on
	// (created_at, id): stable under concurrent inserts and deletes. An
	// unknown workspace has no records.
	ListFiles(ctx context.Context, q ListQuery) (RecordPage, error)
	// FileByID returns a record of workspaceID, or ErrNotFound.
	FileByID(ctx context.Context, workspaceID, id string) (Record, error)
	// DeleteFile removes the record id of workspaceID and gives its bytes
	// back to the workspace's quota, in one transaction, and returns what
	// it removed. ErrNotFound when there is no such record — also for the
	// loser of two concurrent deletes.
	DeleteFile(ctx context.Context, workspaceID, id string) (Record, error)
	// FilePosition returns where the file id of workspaceID stands in the
	// listing, also for a day after it was deleted, so a client paging from
	// it goes on where it was. ErrNotFound for an id that names neither.
	FilePosition(ctx context.Context, workspaceID, id string) (Position, error)
}
