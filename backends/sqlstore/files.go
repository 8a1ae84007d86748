package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/aigateway/gateway/files"
	"github.com/aigateway/gateway/workspace"
)

// Reserve sets aside bytes of workspaceID's quota of limit bytes for ttl:
// stored + unexpired reservations + bytes <= limit, or a *QuotaError
// (files.ErrQuotaExceeded). An unknown workspace is workspace.ErrNotFound.
//
// Reservations of one workspace are decided one at a time, also across
// replicas: the transaction first locks the workspace's usage row (on
// SQLite the one writer does that), then drops expired reservations and
// counts what is left. The reservation expires at the store's clock + ttl.
func (s *Store) Reserve(ctx context.Context, workspaceID string, bytes, limit int64, ttl time.Duration) (_ files.Reservation, err error) {
	defer s.classify(&err)
	return s.reserve(ctx, workspaceID, bytes, false, limit, ttl)
}

// reserve is Reserve, or with upTo ReserveUpTo.
func (s *Store) reserve(ctx context.Context, workspaceID string, bytes int64, upTo bool, limit int64, ttl time.Duration) (_ files.Reservation, err error) {
	if bytes < 0 || ttl <= 0 {
		return files.Reservation{}, invalidf("reserve %d bytes for %v", bytes, ttl)
	}
	wsID, ok := canonicalUUID(workspaceID)
	if !ok {
		return files.Reservation{}, workspace.ErrNotFound
	}
	now := micro(s.now())
	var res files.Reservation
	err = s.inTx(ctx, func(tx *sql.Tx) error {
		stored, err := s.lockQuota(ctx, tx, wsID)
		if err != nil {
			return err
		}
		res, err = s.reserveLocked(ctx, tx, wsID, stored, bytes, upTo, limit, now, now.Add(ttl))
		return err
	})
	if err != nil {
		return files.Reservation{}, err
	}
	return res, nil
}

// lockQuota takes wsID's quota lock, its usage row (made on first need),
// and returns its stored bytes; workspace.ErrNotFound for an unknown
// workspace.
func (s *Store) lockQuota(ctx context.Context, tx *sql.Tx, wsID string) (int64, error) {
	err := ensureUsage(ctx, tx, wsID)
	if s.d.violation(err) == violationForeignKey {
		// PostgreSQL: the workspace was deleted after this statement
		// read it and before the insert's foreign key check.
		return 0, workspace.ErrNotFound
	}
	if err != nil {
		return 0, fmt.Errorf("sqlstore: reserve: %w", err)
	}
	stored, err := lockUsage(ctx, tx, s.d, wsID)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, workspace.ErrNotFound
	}
	if err != nil {
		return 0, fmt.Errorf("sqlstore: reserve: %w", err)
	}
	return stored, nil
}

// reserveLocked is the quota decision of reserve, made under lockQuota's
// lock (stored is what it returned): it drops the workspace's expired
// reservations, counts the others, and inserts a reservation expiring at
// expiresAt, or refuses with a *QuotaError.
func (s *Store) reserveLocked(ctx context.Context, tx *sql.Tx, wsID string, stored, bytes int64, upTo bool, limit int64, now, expiresAt time.Time) (files.Reservation, error) {
	res := files.Reservation{ID: uuid.NewString(), WorkspaceID: wsID, Bytes: bytes, ExpiresAt: expiresAt}
	if _, err := tx.ExecContext(ctx,
		`DELETE FROM quota_reservations WHERE workspace_id = $1 AND expires_at <= $2`,
		wsID, s.d.ts(now)); err != nil {
		return files.Reservation{}, fmt.Errorf("sqlstore: reserve: drop expired: %w", err)
	}
	var reserved int64
	if err := tx.QueryRowContext(ctx,
		`SELECT CAST(COALESCE(SUM(bytes), 0) AS BIGINT) FROM quota_reservations WHERE workspace_id = $1`,
		wsID).Scan(&reserved); err != nil {
		return files.Reservation{}, fmt.Errorf("sqlstore: reserve: %w", err)
	}
	// Written as a subtraction so huge values cannot overflow past the check.
	left := limit - stored - reserved
	if upTo && left > 0 {
		res.Bytes = min(bytes, left)
	}
	if res.Bytes > left || (upTo && left <= 0) {
		return files.Reservation{}, &QuotaError{Limit: limit, Stored: stored, Reserved: reserved, Requested: bytes}
	}
	if _, err := tx.ExecContext(ctx,
		`INSERT INTO quota_reservations (id, workspace_id, bytes, expires_at) VALUES ($1, $2, $3, $4)`,
		res.ID, wsID, res.Bytes, s.d.ts(res.ExpiresAt)); err != nil {
		return files.Reservation{}, fmt.Errorf("sqlstore: reserve: %w", err)
	}
	return res, nil
}

// ensureUsage makes the workspace's usage row on first need; for an unknown
// workspace the SELECT yields nothing, so nothing is inserted.
func ensureUsage(ctx context.Context, tx *sql.Tx, wsID string) error {
	_, err := tx.ExecContext(ctx, `INSERT INTO workspace_usage (workspace_id, stored_bytes)
		SELECT id, 0 FROM workspaces WHERE id = $1
		ON CONFLICT (workspace_id) DO NOTHING`, wsID)
	return err
}

// lockUsage returns the workspace's stored bytes and, on PostgreSQL, locks
// its usage row until the transaction ends. Reserve, Commit and
// DeleteWorkspace all take this lock first, so they never wait on each
// other in opposite orders.
func lockUsage(ctx context.Context, tx *sql.Tx, d dialect, wsID string) (int64, error) {
	var stored int64
	err := tx.QueryRowContext(ctx,
		`SELECT stored_bytes FROM workspace_usage WHERE workspace_id = $1`+d.forUpdate, wsID).Scan(&stored)
	return stored, err
}

// Commit inserts rec and releases res in one transaction, so rec.Size
// replaces the reserved bytes in the workspace's usage.
// files.ErrReservationNotFound when the reservation was already settled or
// has expired, or belongs to another workspace than rec; files.ErrQuotaExceeded
// when rec.Size exceeds the reserved bytes (the reservation is then kept, for the
// caller to release); ErrConflict for a reused rec.ID. On any error nothing
// is inserted.
func (s *Store) Commit(ctx context.Context, res files.Reservation, rec files.Record) (err error) {
	defer s.classify(&err)
	if rec.ID == "" || rec.Size < 0 {
		return invalidf("file record needs an id and a size >= 0")
	}
	wsID, ok := canonicalUUID(rec.WorkspaceID)
	if resWS, _ := canonicalUUID(res.WorkspaceID); !ok || resWS != wsID {
		return files.ErrReservationNotFound
	}
	now := micro(s.now())
	return s.inTx(ctx, func(tx *sql.Tx) error {
		_, err := lockUsage(ctx, tx, s.d, wsID)
		if errors.Is(err, sql.ErrNoRows) {
			return files.ErrReservationNotFound
		}
		if err != nil {
			return fmt.Errorf("sqlstore: commit file: %w", err)
		}
		var reserved int64
		err = tx.QueryRowContext(ctx, `DELETE FROM quota_reservations
			WHERE id = $1 AND workspace_id = $2 AND expires_at > $3
			RETURNING bytes`, res.ID, wsID, s.d.ts(now)).Scan(&reserved)
		if errors.Is(err, sql.ErrNoRows) {
			return files.ErrReservationNotFound
		}
		if err != nil {
			return fmt.Errorf("sqlstore: commit file: %w", err)
		}
		if rec.Size > reserved {
			// The quota check was made for the reserved bytes only.
			return fmt.Errorf("%w: a file of %d bytes exceeds its reservation of %d",
				files.ErrQuotaExceeded, rec.Size, reserved)
		}
		return s.insertFile(ctx, tx, wsID, rec)
	})
}

// insertFile inserts rec into wsID and adds its size to the workspace's
// stored bytes, inside a transaction holding the workspace's quota lock
// (lockUsage) whose reservation covers rec.Size. ErrConflict for a reused
// rec.ID.
func (s *Store) insertFile(ctx context.Context, tx *sql.Tx, wsID string, rec files.Record) error {
	// sha256 is written empty: uploads no longer hash their bytes (the
	// file id is the ETag), but the column stays, since migrations only
	// add and a binary rolled back to one that still writes and reads
	// it must keep working on this database.
	_, err := tx.ExecContext(ctx, `INSERT INTO files
		(id, workspace_id, key_id, filename, mime_type, size, sha256, backend, object_key, purpose, created_at)
		VALUES ($1, $2, $3, $4, $5, $6, '', $7, $8, $9, $10)`,
		rec.ID, wsID, rec.KeyID, rec.Filename, rec.MimeType, rec.Size, rec.Backend,
		rec.ObjectKey, string(rec.Purpose), s.d.ts(micro(rec.CreatedAt)))
	if s.d.violation(err) == violationPrimaryKey {
		return fmt.Errorf("commit file: %w", ErrConflict)
	}
	if err != nil {
		return fmt.Errorf("sqlstore: commit file: %w", err)
	}
	if _, err := tx.ExecContext(ctx,
		`UPDATE workspace_usage SET stored_bytes = stored_bytes + $2 WHERE workspace_id = $1`,
		wsID, rec.Size); err != nil {
		return fmt.Errorf("sqlstore: commit file: %w", err)
	}
	return nil
}

// Release drops a reservation. Releasing twice, or after Commit, is
// harmless.
func (s *Store) Release(ctx context.Context, res files.Reservation) (err error) {
	defer s.classify(&err)
	if _, err := s.w.ExecContext(ctx, `DELETE FROM quota_reservations WHERE id = $1`, res.ID); err != nil {
		return fmt.Errorf("sqlstore: release reservation: %w", err)
	}
	return nil
}

// StoredBytes is the sum of the sizes of workspaceID's records (0 for a
// workspace without any, or an unknown one).
func (s *Store) StoredBytes(ctx context.Context, workspaceID string) (_ int64, err error) {
	defer s.classify(&err)
	wsID, ok := canonicalUUID(workspaceID)
	if !ok {
		return 0, nil
	}
	var n int64
	err = s.r.QueryRowContext(ctx,
		`SELECT stored_bytes FROM workspace_usage WHERE workspace_id = $1`, wsID).Scan(&n)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("sqlstore: stored bytes: %w", err)
	}
	return n, nil
}

// FileByID returns the record id of workspaceID, or files.ErrNotFound (also
// when the file belongs to another workspace).
func (s *Store) FileByID(ctx context.Context, workspaceID, id string) (_ files.Record, err error) {
	defer s.classify(&err)
	wsID, ok := canonicalUUID(workspaceID)
	if !ok {
		return files.Record{}, files.ErrNotFound
	}
	var r files.Record
	err = s.r.QueryRowContext(ctx, `SELECT id, workspace_id, key_id, filename, mime_type, size,
		backend, object_key, purpose, created_at FROM files WHERE id = $1 AND workspace_id = $2`, id, wsID).Scan(
		&r.ID, &r.WorkspaceID, &r.KeyID, &r.Filename, &r.MimeType, &r.Size, &r.Backend,
		&r.ObjectKey, (*string)(&r.Purpose), timeCol{&r.CreatedAt})
	if errors.Is(err, sql.ErrNoRows) {
		return files.Record{}, files.ErrNotFound
	}
	if err != nil {
		return files.Record{}, fmt.Errorf("sqlstore: file by id: %w", err)
	}
	return r, nil
}
