package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/aigateway/gateway/files"
)

const fileColumns = `id, workspace_id, key_id, filename, mime_type, size, backend, object_key, purpose, created_at`

// scanFile reads one row of fileColumns.
func scanFile(row interface{ Scan(...any) error }) (files.Record, error) {
	var r files.Record
	err := row.Scan(&r.ID, &r.WorkspaceID, &r.KeyID, &r.Filename, &r.MimeType, &r.Size, &r.Backend,
		&r.ObjectKey, (*string)(&r.Purpose), timeCol{&r.CreatedAt})
	return r, err
}

// ListFiles returns one page of q.WorkspaceID's records by keyset on
// (created_at, id), in q's order. It asks for one row more than the page so
// that HasMore needs no second query. The row comparison is answered by a
// range scan of files_workspace_created in either direction.
func (s *Store) ListFiles(ctx context.Context, q files.ListQuery) (_ files.RecordPage, err error) {
	defer s.classify(&err)
	if q.Limit < 1 {
		return files.RecordPage{}, invalidf("list files: limit %d", q.Limit)
	}
	wsID, ok := canonicalUUID(q.WorkspaceID)
	if !ok {
		return files.RecordPage{}, nil
	}
	cmpOp, dir := "<", "DESC"
	if q.Ascending {
		cmpOp, dir = ">", "ASC"
	}
	query := `SELECT ` + fileColumns + ` FROM files WHERE workspace_id = $1`
	args := []any{wsID}
	if q.Purpose != "" {
		args = append(args, string(q.Purpose))
		query += fmt.Sprintf(` AND purpose = $%d`, len(args))
	}
	if q.After != nil {
		args = append(args, s.d.ts(micro(q.After.CreatedAt)), q.After.ID)
		query += fmt.Sprintf(` AND (created_at, id) `+cmpOp+` ($%d, $%d)`, len(args)-1, len(args))
	}
	query += fmt.Sprintf(` ORDER BY created_at %s, id %s LIMIT %d`, dir, dir, q.Limit+1)
	rows, err := s.r.QueryContext(ctx, query, args...)
	if err != nil {
		return files.RecordPage{}, fmt.Errorf("sqlstore: list files: %w", err)
	}
	defer rows.Close()
	page := files.RecordPage{Records: make([]files.Record, 0, min(q.Limit, 1000))}
	for rows.Next() {
		r, err := scanFile(rows)
		if err != nil {
			return files.RecordPage{}, fmt.Errorf("sqlstore: list files: %w", err)
		}
		if len(page.Records) == q.Limit {
			page.HasMore = true
			break
		}
		page.Records = append(page.Records, r)
	}
	if err := rows.Err(); err != nil {
		return files.RecordPage{}, fmt.Errorf("sqlstore: list files: %w", err)
	}
	return page, nil
}

// DeleteFile removes the record id of workspaceID and takes its size off
// the workspace's stored bytes in one transaction. Of two concurrent
// deletes one removes the row and the other's DELETE matches nothing (on
// PostgreSQL it waits for the first to commit, then finds the row gone), so
// the loser gets files.ErrNotFound and the bytes are given back once.
func (s *Store) DeleteFile(ctx context.Context, workspaceID, id string) (_ files.Record, err error) {
	defer s.classify(&err)
	wsID, ok := canonicalUUID(workspaceID)
	if !ok {
		return files.Record{}, files.ErrNotFound
	}
	var rec files.Record
	err = s.inTx(ctx, func(tx *sql.Tx) error {
		var err error
		rec, err = scanFile(tx.QueryRowContext(ctx,
			`DELETE FROM files WHERE id = $1 AND workspace_id = $2 RETURNING `+fileColumns, id, wsID))
		if errors.Is(err, sql.ErrNoRows) {
			return files.ErrNotFound
		}
		if err != nil {
			return fmt.Errorf("sqlstore: delete file: %w", err)
		}
		if _, err := tx.ExecContext(ctx,
			`UPDATE workspace_usage SET stored_bytes = stored_bytes - $2 WHERE workspace_id = $1`,
			wsID, rec.Size); err != nil {
			return fmt.Errorf("sqlstore: delete file: %w", err)
		}
		// Its place in the listing outlives it, for clients paging from it.
		if _, err := tx.ExecContext(ctx, `INSERT INTO deleted_files (workspace_id, id, created_at, deleted_at)
			VALUES ($1, $2, $3, $4) ON CONFLICT (workspace_id, id) DO NOTHING`,
			wsID, rec.ID, s.d.ts(micro(rec.CreatedAt)), s.d.ts(micro(s.now()))); err != nil {
			return fmt.Errorf("sqlstore: delete file: %w", err)
		}
		return nil
	})
	if err != nil {
		return files.Record{}, err
	}
	return rec, nil
}

// FilePosition returns where the file id of workspaceID stands in the
// listing: its record's (created_at, id), or a deleted file's, for a day
// after the delete. files.ErrNotFound for an id that names neither.
func (s *Store) FilePosition(ctx context.Context, workspaceID, id string) (_ files.Position, err error) {
	defer s.classify(&err)
	wsID, ok := canonicalUUID(workspaceID)
	if !ok {
		return files.Position{}, files.ErrNotFound
	}
	p := files.Position{ID: id}
	err = s.r.QueryRowContext(ctx, `SELECT created_at FROM files WHERE id = $1 AND workspace_id = $2
		UNION ALL SELECT created_at FROM deleted_files WHERE id = $1 AND workspace_id = $2 LIMIT 1`,
		id, wsID).Scan(timeCol{&p.CreatedAt})
	if errors.Is(err, sql.ErrNoRows) {
		return files.Position{}, files.ErrNotFound
	}
	if err != nil {
		return files.Position{}, fmt.Errorf("sqlstore: file position: %w", err)
	}
	return p, nil
}
