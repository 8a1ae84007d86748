package sqlstore

import (
	"context"
	"database/sql"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/aigateway/gateway/files"
	"github.com/aigateway/gateway/workspace"
)

// The sweeper's side of the store. Every statement is bounded by its
// limit and idempotent, so every replica may sweep at once.

// SweepReservations deletes at most limit reservations expired at the
// store's clock and returns how many it deleted. Reserve already ignores
// them; this only keeps the table small.
func (s *Store) SweepReservations(ctx context.Context, limit int) (_ int, err error) {
	defer s.classify(&err)
	now := micro(s.now())
	res, err := s.w.ExecContext(ctx, `DELETE FROM quota_reservations WHERE id IN
		(SELECT id FROM quota_reservations WHERE expires_at <= $1 LIMIT $2)`, s.d.ts(now), limit)
	if err != nil {
		return 0, fmt.Errorf("sqlstore: sweep reservations: %w", err)
	}
	n, err := res.RowsAffected()
	return int(n), err
}

// SweepIdempotency deletes at most limit idempotency records older than
// workspace.IdempotencyTTL (those of the current table, then the legacy
// one's) and returns how many it deleted. Expired records are already
// ignored and replaced when their key comes back.
func (s *Store) SweepIdempotency(ctx context.Context, limit int) (_ int, err error) {
	defer s.classify(&err)
	cutoff := s.d.ts(micro(s.now()).Add(-workspace.IdempotencyTTL))
	total := 0
	for _, q := range []string{
		`DELETE FROM idempotency_records WHERE (user_id, scope, idem_key) IN
			(SELECT user_id, scope, idem_key FROM idempotency_records WHERE created_at <= $1 LIMIT $2)`,
		`DELETE FROM idempotency WHERE (user_id, idem_key) IN
			(SELECT user_id, idem_key FROM idempotency WHERE created_at <= $1 LIMIT $2)`,
	} {
		if total >= limit {
			break
		}
		res, err := s.w.ExecContext(ctx, q, cutoff, limit-total)
		if err != nil {
			return total, fmt.Errorf("sqlstore: sweep idempotency records: %w", err)
		}
		n, err := res.RowsAffected()
		if err != nil {
			return total, fmt.Errorf("sqlstore: sweep idempotency records: %w", err)
		}
		total += int(n)
	}
	return total, nil
}

// KnownObjects returns which of keys are the object of a file record on
// backend.
func (s *Store) KnownObjects(ctx context.Context, backend string, keys []string) (_ map[string]bool, err error) {
	defer s.classify(&err)
	known := make(map[string]bool, len(keys))
	for start := 0; start < len(keys); start += renewBatch {
		batch := keys[start:min(start+renewBatch, len(keys))]
		args := make([]any, 0, len(batch)+1)
		args = append(args, backend)
		marks := make([]string, len(batch))
		for i, k := range batch {
			args = append(args, k)
			marks[i] = "$" + strconv.Itoa(i+2)
		}
		rows, err := s.r.QueryContext(ctx, `SELECT object_key FROM files
			WHERE backend = $1 AND object_key IN (`+strings.Join(marks, ", ")+`)`, args...)
		if err != nil {
			return nil, fmt.Errorf("sqlstore: known objects: %w", err)
		}
		if err := scanKeys(rows, known); err != nil {
			return nil, fmt.Errorf("sqlstore: known objects: %w", err)
		}
	}
	return known, nil
}

func scanKeys(rows *sql.Rows, into map[string]bool) error {
	defer rows.Close()
	for rows.Next() {
		var k string
		if err := rows.Scan(&k); err != nil {
			return err
		}
		into[k] = true
	}
	return rows.Err()
}

// FilesAfter returns at most limit records stored on backend whose id
// sorts after after, in id order: a cursor over every file, for the
// sweeper's check that each one's object still exists.
func (s *Store) FilesAfter(ctx context.Context, backend, after string, limit int) (_ []files.Record, err error) {
	defer s.classify(&err)
	rows, err := s.r.QueryContext(ctx, `SELECT id, workspace_id, object_key, size, created_at FROM files
		WHERE backend = $1 AND id > $2 ORDER BY id LIMIT $3`, backend, after, limit)
	if err != nil {
		return nil, fmt.Errorf("sqlstore: files after: %w", err)
	}
	defer rows.Close()
	var out []files.Record
	for rows.Next() {
		r := files.Record{Backend: backend}
		if err := rows.Scan(&r.ID, &r.WorkspaceID, &r.ObjectKey, &r.Size, timeCol{&r.CreatedAt}); err != nil {
			return nil, fmt.Errorf("sqlstore: files after: %w", err)
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlstore: files after: %w", err)
	}
	return out, nil
}

// KeyChangeRetention is how long the key change log keeps an entry: far
// beyond any replica's poll margin (keys.Revoker), so pruning never hides an
// entry a replica has yet to read.
const KeyChangeRetention = time.Hour

// SweepKeyChanges deletes at most limit entries of the key change log older
// than KeyChangeRetention and returns how many it deleted.
func (s *Store) SweepKeyChanges(ctx context.Context, limit int) (_ int, err error) {
	defer s.classify(&err)
	cutoff := s.d.ts(micro(s.now()).Add(-KeyChangeRetention))
	res, err := s.w.ExecContext(ctx, `DELETE FROM key_changes WHERE seq IN
		(SELECT seq FROM key_changes WHERE changed_at < $1 LIMIT $2)`, cutoff, limit)
	if err != nil {
		return 0, fmt.Errorf("sqlstore: sweep key changes: %w", err)
	}
	n, err := res.RowsAffected()
	return int(n), err
}

// DeletedFileRetention is how long a deleted file's position anchors
// paging (files.Records.FilePosition).
const DeletedFileRetention = 24 * time.Hour

// SweepDeletedFiles deletes at most limit positions of files deleted more
// than DeletedFileRetention ago and returns how many it deleted.
func (s *Store) SweepDeletedFiles(ctx context.Context, limit int) (_ int, err error) {
	defer s.classify(&err)
	cutoff := s.d.ts(micro(s.now()).Add(-DeletedFileRetention))
	res, err := s.w.ExecContext(ctx, `DELETE FROM deleted_files WHERE (workspace_id, id) IN
		(SELECT workspace_id, id FROM deleted_files WHERE deleted_at < $1 LIMIT $2)`, cutoff, limit)
	if err != nil {
		return 0, fmt.Errorf("sqlstore: sweep deleted files: %w", err)
	}
	n, err := res.RowsAffected()
	return int(n), err
}
