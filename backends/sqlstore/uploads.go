package sqlstore

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/aigateway/gateway/files"
	"github.com/aigateway/gateway/workspace"
)

var _ files.UploadStore = (*Store)(nil)

// uploadCreateScope is the scope of upload creations in idempotency_records,
// beside workspace.ScopeCreate and keys.ScopeCreate.
const uploadCreateScope = "upload.create"

// uploadIdempotencyTTL is how long an upload creation's Idempotency-Key is
// remembered: as long as a workspace creation's, since the sweeper removes
// the records of every scope with the one lifetime (SweepIdempotency).
const uploadIdempotencyTTL = workspace.IdempotencyTTL

// uploadColumns are read by scanUpload, in its order, from uploads aliased u.
const uploadColumns = `u.id, u.workspace_id, u.key_id, u.filename, u.mime_type, u.purpose, u.bytes,
	u.status, u.created_at, u.expires_at, u.reservation_id, u.file_id, u.parts_count, u.parts_bytes`

// uploadRow is an upload as stored, with the sums of its parts.
type uploadRow struct {
	files.UploadRecord
	partsCount int
	partsBytes int64
}

func (r *uploadRow) dest() []any {
	return []any{&r.ID, &r.WorkspaceID, &r.KeyID, &r.Filename, &r.MimeType, (*string)(&r.Purpose), &r.Bytes,
		(*string)(&r.Status), timeCol{&r.CreatedAt}, timeCol{&r.ExpiresAt}, &r.ReservationID,
		nullStringCol{&r.FileID}, &r.partsCount, &r.partsBytes}
}

// nullStringCol scans a nullable text column; NULL is "".
type nullStringCol struct{ s *string }

func (c nullStringCol) Scan(src any) error {
	switch v := src.(type) {
	case nil:
		*c.s = ""
	case string:
		*c.s = v
	case []byte:
		*c.s = string(v)
	default:
		return fmt.Errorf("sqlstore: cannot scan %T into a string", src)
	}
	return nil
}

// seen is the upload as callers see it at now: a pending upload past its
// ExpiresAt is expired, whether or not ExpireUploads has written so yet.
func (r uploadRow) seen(now time.Time) files.UploadRecord {
	u := r.UploadRecord
	if u.Status == files.UploadPending && !now.Before(u.ExpiresAt) {
		u.Status = files.UploadExpired
	}
	return u
}

// takesChanges refuses an upload that is not pending at now.
func (r uploadRow) takesChanges(now time.Time) error {
	if st := r.seen(now).Status; st != files.UploadPending {
		return &files.UploadStateError{Status: st}
	}
	return nil
}

// CreateUpload inserts u as pending and reserves u.Bytes of its workspace's
// quota of quota bytes until u.ExpiresAt, and returns it with its
// ReservationID.
//
// The workspace's quota lock (its usage row, as Reserve takes it) is held
// while its unexpired pending uploads are counted against maxPending
// (files.ErrTooManyPending) and the bytes are checked as Reserve checks
// them (a *QuotaError, files.ErrQuotaExceeded), so neither limit is passed
// by concurrent creations, also across replicas. An unknown workspace is
// workspace.ErrNotFound; a reused u.ID ErrConflict; u.ExpiresAt not after
// the store's clock ErrInvalidArgument.
//
// With idem set, the claim of (idem.UserID, idem.Key) is written in the same
// transaction (idem.UserID must be a recorded user: ErrUserNotFound). When
// the user created an upload with that key less than
// workspace.IdempotencyTTL ago, that upload is returned as it is now, with
// the request hash it was created with, created false, and nothing is
// reserved or counted. Concurrent calls with one key wait for each other, so
// at most one creates. A refused creation keeps no claim.
func (s *Store) CreateUpload(ctx context.Context, u files.UploadRecord, quota int64, maxPending int, idem *files.UploadIdempotency) (_ files.UploadRecord, _ string, _ bool, err error) {
	defer s.classify(&err)
	return s.createUpload(ctx, u, "", quota, maxPending, idem)
}

var _ files.ForwardedUploadStore = (*Store)(nil)

// CreateForwardedUpload is CreateUpload for an upload forwarded to
// provider, whose id u.ID is the provider's: UploadBackend names the
// provider from then on. Its pending upload counts against maxPending and
// its bytes are reserved as a native upload's are.
func (s *Store) CreateForwardedUpload(ctx context.Context, u files.UploadRecord, provider string, quota int64, maxPending int, idem *files.UploadIdempotency) (_ files.UploadRecord, _ string, _ bool, err error) {
	defer s.classify(&err)
	if provider == "" {
		return files.UploadRecord{}, "", false, invalidf("a forwarded upload needs its provider")
	}
	return s.createUpload(ctx, u, provider, quota, maxPending, idem)
}

// UploadBackend returns the provider the upload id of workspaceID was
// forwarded to, "" for a native one; files.ErrUploadNotFound when there is
// no such upload.
func (s *Store) UploadBackend(ctx context.Context, workspaceID, id string) (_ string, err error) {
	defer s.classify(&err)
	wsID, ok := canonicalUUID(workspaceID)
	if !ok {
		return "", files.ErrUploadNotFound
	}
	var backend string
	err = s.r.QueryRowContext(ctx, `SELECT backend FROM uploads WHERE id = $1 AND workspace_id = $2`, id, wsID).Scan(&backend)
	if errors.Is(err, sql.ErrNoRows) {
		return "", files.ErrUploadNotFound
	}
	if err != nil {
		return "", fmt.Errorf("sqlstore: upload backend: %w", err)
	}
	return backend, nil
}

func (s *Store) createUpload(ctx context.Context, u files.UploadRecord, backend string, quota int64, maxPending int, idem *files.UploadIdempotency) (_ files.UploadRecord, _ string, _ bool, err error) {
	if u.ID == "" || u.Bytes < 0 {
		return files.UploadRecord{}, "", false, invalidf("upload needs an id and bytes >= 0")
	}
	if idem != nil && (idem.UserID == "" || idem.Key == "") {
		return files.UploadRecord{}, "", false, invalidf("idempotency record must name the user and a key")
	}
	wsID, ok := canonicalUUID(u.WorkspaceID)
	if !ok {
		return files.UploadRecord{}, "", false, workspace.ErrNotFound
	}
	now := micro(s.now())
	u.WorkspaceID, u.Status, u.FileID, u.ReservationID = wsID, files.UploadPending, "", ""
	u.CreatedAt, u.ExpiresAt = micro(u.CreatedAt), micro(u.ExpiresAt)
	if u.CreatedAt.IsZero() {
		u.CreatedAt = now
	}
	if !u.ExpiresAt.After(now) {
		return files.UploadRecord{}, "", false, invalidf("upload expires at %v, not after now (%v)", u.ExpiresAt, now)
	}

	var (
		prior     *files.UploadRecord
		priorHash string
	)
	err = s.inTx(ctx, func(tx *sql.Tx) error {
		if idem != nil {
			p, hash, err := s.claimUploadCreation(ctx, tx, *idem, u.ID, now)
			if err != nil || p != nil {
				prior, priorHash = p, hash
				return err
			}
		}
		stored, err := s.lockQuota(ctx, tx, wsID)
		if err != nil {
			return err
		}
		var pending int
		if err := tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM uploads
			WHERE workspace_id = $1 AND status = 'pending' AND expires_at > $2`,
			wsID, s.d.ts(now)).Scan(&pending); err != nil {
			return fmt.Errorf("sqlstore: create upload: count pending: %w", err)
		}
		if pending >= maxPending {
			return files.ErrTooManyPending
		}
		res, err := s.reserveLocked(ctx, tx, wsID, stored, u.Bytes, false, quota, now, u.ExpiresAt)
		if err != nil {
			return err
		}
		u.ReservationID = res.ID
		_, err = tx.ExecContext(ctx, `INSERT INTO uploads (id, workspace_id, key_id, filename, mime_type,
			purpose, bytes, status, created_at, expires_at, reservation_id, backend)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)`,
			u.ID, wsID, u.KeyID, u.Filename, u.MimeType, string(u.Purpose), u.Bytes, string(u.Status),
			s.d.ts(u.CreatedAt), s.d.ts(u.ExpiresAt), u.ReservationID, backend)
		if s.d.violation(err) == violationPrimaryKey {
			return fmt.Errorf("create upload: %w", ErrConflict)
		}
		if err != nil {
			return fmt.Errorf("sqlstore: create upload: %w", err)
		}
		return nil
	})
	switch {
	case err != nil:
		return files.UploadRecord{}, "", false, err
	case prior != nil:
		return *prior, priorHash, false, nil
	case idem != nil:
		s.expireIdempotency(ctx, idem.UserID)
		return u, idem.RequestHash, true, nil
	}
	return u, "", true, nil
}

// uploadCreation is the answer kept for an idempotent upload creation: the
// upload is read afresh on a replay, so the retry sees its current status.
type uploadCreation struct {
	UploadID string `json:"upload_id"`
}

// claimUploadCreation claims idem for the upload uploadID, or returns the
// upload an unexpired claim of it made, with that claim's request hash.
func (s *Store) claimUploadCreation(ctx context.Context, tx *sql.Tx, idem files.UploadIdempotency, uploadID string, now time.Time) (*files.UploadRecord, string, error) {
	answer, err := json.Marshal(uploadCreation{UploadID: uploadID})
	if err != nil {
		return nil, "", fmt.Errorf("sqlstore: encode idempotency record: %w", err)
	}
	prior, err := s.claimRecord(ctx, tx, idemRecord{
		userID: idem.UserID, scope: uploadCreateScope, key: idem.Key, requestHash: idem.RequestHash,
		answer: answer, createdAt: now,
	}, uploadIdempotencyTTL)
	if err != nil || prior == nil {
		return nil, "", err
	}
	var uc uploadCreation
	if err := json.Unmarshal(prior.answer, &uc); err != nil {
		return nil, "", fmt.Errorf("sqlstore: decode idempotency record: %w", err)
	}
	var r uploadRow
	if err := tx.QueryRowContext(ctx, `SELECT `+uploadColumns+` FROM uploads u WHERE u.id = $1`,
		uc.UploadID).Scan(r.dest()...); err != nil {
		// The claim and the upload are written in one transaction, so a
		// claim without its upload is a broken database, not a client's
		// error.
		return nil, "", fmt.Errorf("sqlstore: upload %q of an idempotency record: %w", uc.UploadID, err)
	}
	u := r.seen(now)
	return &u, prior.requestHash, nil
}

// Upload returns the upload id of workspaceID and its parts in the order
// they were stored, read in one statement so the two agree. A pending
// upload past its ExpiresAt is answered expired. files.ErrUploadNotFound
// when workspaceID holds no such upload.
func (s *Store) Upload(ctx context.Context, workspaceID, id string) (_ files.UploadRecord, _ []files.UploadPart, err error) {
	defer s.classify(&err)
	wsID, ok := canonicalUUID(workspaceID)
	if !ok {
		return files.UploadRecord{}, nil, files.ErrUploadNotFound
	}
	now := micro(s.now())
	rows, err := s.r.QueryContext(ctx, `SELECT `+uploadColumns+`, p.id, p.bytes, p.object_key, p.created_at, p.text
		FROM uploads u LEFT JOIN upload_parts p ON p.upload_id = u.id
		WHERE u.id = $1 AND u.workspace_id = $2 ORDER BY p.seq`, id, wsID)
	if err != nil {
		return files.UploadRecord{}, nil, fmt.Errorf("sqlstore: upload: %w", err)
	}
	defer rows.Close()
	var (
		r     uploadRow
		found bool
		parts = []files.UploadPart{}
	)
	for rows.Next() {
		var (
			partID, objectKey, text sql.NullString
			bytes                   sql.NullInt64
			created                 *time.Time
		)
		if err := rows.Scan(append(r.dest(), &partID, &bytes, &objectKey, nullTimeCol{&created}, &text)...); err != nil {
			return files.UploadRecord{}, nil, fmt.Errorf("sqlstore: upload: %w", err)
		}
		found = true
		if partID.Valid {
			parts = append(parts, files.UploadPart{ID: partID.String, UploadID: r.ID, Bytes: bytes.Int64,
				ObjectKey: objectKey.String, CreatedAt: *created, Text: text.String})
		}
	}
	if err := rows.Err(); err != nil {
		return files.UploadRecord{}, nil, fmt.Errorf("sqlstore: upload: %w", err)
	}
	if !found {
		return files.UploadRecord{}, nil, files.ErrUploadNotFound
	}
	return r.seen(now), parts, nil
}

// UploadTally returns the upload id of workspaceID and the sums of its
// parts, which its row keeps, without reading the parts.
func (s *Store) UploadTally(ctx context.Context, workspaceID, id string) (_ files.UploadRecord, _ files.PartsTally, err error) {
	defer s.classify(&err)
	wsID, ok := canonicalUUID(workspaceID)
	if !ok {
		return files.UploadRecord{}, files.PartsTally{}, files.ErrUploadNotFound
	}
	var r uploadRow
	err = s.r.QueryRowContext(ctx, `SELECT `+uploadColumns+` FROM uploads u
		WHERE u.id = $1 AND u.workspace_id = $2`, id, wsID).Scan(r.dest()...)
	if errors.Is(err, sql.ErrNoRows) {
		return files.UploadRecord{}, files.PartsTally{}, files.ErrUploadNotFound
	}
	if err != nil {
		return files.UploadRecord{}, files.PartsTally{}, fmt.Errorf("sqlstore: upload tally: %w", err)
	}
	return r.seen(micro(s.now())), files.PartsTally{Count: r.partsCount, Bytes: r.partsBytes}, nil
}

// lockUpload reads the upload id of wsID and, on PostgreSQL, locks its row
// until the transaction ends (on SQLite the one writer already holds the
// database). files.ErrUploadNotFound when there is none.
func (s *Store) lockUpload(ctx context.Context, tx *sql.Tx, wsID, id string) (uploadRow, error) {
	var r uploadRow
	err := tx.QueryRowContext(ctx, `SELECT `+uploadColumns+` FROM uploads u
		WHERE u.id = $1 AND u.workspace_id = $2`+s.d.forUpdate, id, wsID).Scan(r.dest()...)
	if errors.Is(err, sql.ErrNoRows) {
		return uploadRow{}, files.ErrUploadNotFound
	}
	if err != nil {
		return uploadRow{}, fmt.Errorf("sqlstore: lock upload: %w", err)
	}
	return r, nil
}

// AddPart records p, whose object is stored, as the next part of its upload
// in workspaceID. The upload's row stays locked from the checks to the
// insert (SELECT … FOR UPDATE on PostgreSQL, the one writer on SQLite), so
// concurrent parts, on any replica, are decided one at a time and never
// take the upload past its bytes or maxParts parts. Errors:
// files.ErrUploadNotFound; a *files.UploadStateError when the upload is not
// pending or has expired; files.ErrPartsExceedUpload; ErrConflict for a
// reused p.ID. On any error nothing is recorded. A zero p.CreatedAt is the
// store's clock.
func (s *Store) AddPart(ctx context.Context, workspaceID string, p files.UploadPart, maxParts int) (err error) {
	defer s.classify(&err)
	if p.ID == "" || p.Bytes < 0 {
		return invalidf("part needs an id and bytes >= 0")
	}
	wsID, ok := canonicalUUID(workspaceID)
	if !ok {
		return files.ErrUploadNotFound
	}
	now := micro(s.now())
	created := micro(p.CreatedAt)
	if p.CreatedAt.IsZero() {
		created = now
	}
	return s.inTx(ctx, func(tx *sql.Tx) error {
		r, err := s.lockUpload(ctx, tx, wsID, p.UploadID)
		if err != nil {
			return err
		}
		if err := r.takesChanges(now); err != nil {
			return err
		}
		if r.partsCount >= maxParts {
			return fmt.Errorf("%w: it holds %d parts, the most", files.ErrPartsExceedUpload, r.partsCount)
		}
		// Written as a subtraction so a huge part cannot overflow past the check.
		if p.Bytes > r.Bytes-r.partsBytes {
			return fmt.Errorf("%w: %d bytes stored + %d > %d", files.ErrPartsExceedUpload, r.partsBytes, p.Bytes, r.Bytes)
		}
		_, err = tx.ExecContext(ctx, `INSERT INTO upload_parts (id, upload_id, seq, bytes, object_key, created_at, text)
			VALUES ($1, $2, $3, $4, $5, $6, $7)`, p.ID, r.ID, r.partsCount+1, p.Bytes, p.ObjectKey, s.d.ts(created),
			sql.NullString{String: p.Text, Valid: p.Text != ""})
		if s.d.violation(err) == violationPrimaryKey {
			return fmt.Errorf("add part: %w", ErrConflict)
		}
		if err != nil {
			return fmt.Errorf("sqlstore: add part: %w", err)
		}
		if _, err := tx.ExecContext(ctx, `UPDATE uploads SET parts_count = parts_count + 1,
			parts_bytes = parts_bytes + $2 WHERE id = $1`, r.ID, p.Bytes); err != nil {
			return fmt.Errorf("sqlstore: add part: %w", err)
		}
		return nil
	})
}

// CompleteUpload inserts rec, the file assembled from the upload's parts,
// as Commit inserts a file, in one transaction with the upload turning
// completed (FileID rec.ID), its reservation released (rec.Size, at most the
// reserved bytes, replacing it in the workspace's usage) and its parts
// becoming RemovableParts. It takes the workspace's quota lock, then the
// upload's row, so of racing completions one wins and the others get a
// *files.UploadStateError (completed). Errors: files.ErrUploadNotFound; a
// *files.UploadStateError when the upload is not pending or has expired;
// files.ErrQuotaExceeded when rec.Size exceeds the reservation;
// files.ErrReservationNotFound when the reservation is gone (released by
// someone else); ErrConflict for a reused rec.ID. On any error nothing
// changes. rec.WorkspaceID, when set, must be workspaceID.
func (s *Store) CompleteUpload(ctx context.Context, workspaceID, uploadID string, rec files.Record) (err error) {
	defer s.classify(&err)
	if rec.ID == "" || rec.Size < 0 {
		return invalidf("file record needs an id and a size >= 0")
	}
	wsID, ok := canonicalUUID(workspaceID)
	if !ok {
		return files.ErrUploadNotFound
	}
	if recWS, ok := canonicalUUID(rec.WorkspaceID); rec.WorkspaceID != "" && (!ok || recWS != wsID) {
		return invalidf("file record of workspace %q completes an upload of %q", rec.WorkspaceID, wsID)
	}
	now := micro(s.now())
	return s.inTx(ctx, func(tx *sql.Tx) error {
		// The quota lock first, as Commit and Reserve take it, so the two
		// locks are always taken in one order.
		if _, err := lockUsage(ctx, tx, s.d, wsID); errors.Is(err, sql.ErrNoRows) {
			// An upload's creation made the usage row, so there is none.
			return files.ErrUploadNotFound
		} else if err != nil {
			return fmt.Errorf("sqlstore: complete upload: %w", err)
		}
		r, err := s.lockUpload(ctx, tx, wsID, uploadID)
		if err != nil {
			return err
		}
		if err := r.takesChanges(now); err != nil {
			return err
		}
		var reserved int64
		err = tx.QueryRowContext(ctx, `DELETE FROM quota_reservations
			WHERE id = $1 AND workspace_id = $2 AND expires_at > $3
			RETURNING bytes`, r.ReservationID, wsID, s.d.ts(now)).Scan(&reserved)
		if errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("complete upload %s: %w", r.ID, files.ErrReservationNotFound)
		}
		if err != nil {
			return fmt.Errorf("sqlstore: complete upload: %w", err)
		}
		if rec.Size > reserved {
			return fmt.Errorf("%w: a file of %d bytes exceeds its upload's reservation of %d",
				files.ErrQuotaExceeded, rec.Size, reserved)
		}
		if err := s.insertFile(ctx, tx, wsID, rec); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `UPDATE uploads SET status = $2, file_id = $3 WHERE id = $1`,
			r.ID, string(files.UploadCompleted), rec.ID); err != nil {
			return fmt.Errorf("sqlstore: complete upload: %w", err)
		}
		return s.settleParts(ctx, tx, []string{r.ID}, now)
	})
}

// CancelUpload makes the pending upload id of workspaceID cancelled,
// releases its reservation and makes its parts RemovableParts, in one
// transaction holding the upload's row, and returns the upload. Errors:
// files.ErrUploadNotFound; a *files.UploadStateError when it is not pending
// or has expired.
func (s *Store) CancelUpload(ctx context.Context, workspaceID, id string) (_ files.UploadRecord, err error) {
	defer s.classify(&err)
	wsID, ok := canonicalUUID(workspaceID)
	if !ok {
		return files.UploadRecord{}, files.ErrUploadNotFound
	}
	now := micro(s.now())
	var u files.UploadRecord
	err = s.inTx(ctx, func(tx *sql.Tx) error {
		r, err := s.lockUpload(ctx, tx, wsID, id)
		if err != nil {
			return err
		}
		if err := r.takesChanges(now); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `UPDATE uploads SET status = $2 WHERE id = $1`,
			r.ID, string(files.UploadCancelled)); err != nil {
			return fmt.Errorf("sqlstore: cancel upload: %w", err)
		}
		if _, err := tx.ExecContext(ctx, `DELETE FROM quota_reservations WHERE id = $1`, r.ReservationID); err != nil {
			return fmt.Errorf("sqlstore: cancel upload: %w", err)
		}
		u = r.UploadRecord
		u.Status = files.UploadCancelled
		return s.settleParts(ctx, tx, []string{r.ID}, now)
	})
	if err != nil {
		return files.UploadRecord{}, err
	}
	return u, nil
}

// ExpireUploads makes at most limit pending uploads past their ExpiresAt
// at the store's clock expired, the oldest first, releases their
// reservations and makes their parts RemovableParts, and says how many it
// expired. Safe to run on every replica at once: an upload another call
// expired, or a racing CompleteUpload or CancelUpload settled, is not
// counted again.
func (s *Store) ExpireUploads(ctx context.Context, limit int) (_ int, err error) {
	defer s.classify(&err)
	if limit <= 0 {
		return 0, nil
	}
	now := micro(s.now())
	var n int
	err = s.inTx(ctx, func(tx *sql.Tx) error {
		// The status is checked again outside the subquery: on PostgreSQL an
		// upload settled by a transaction this one waited for is then
		// skipped, since the outer WHERE is rechecked on the row it waited
		// for.
		rows, err := tx.QueryContext(ctx, `UPDATE uploads SET status = 'expired'
			WHERE id IN (SELECT id FROM uploads WHERE status = 'pending' AND expires_at <= $1
				ORDER BY expires_at LIMIT $2)
			AND status = 'pending' AND expires_at <= $1
			RETURNING id, reservation_id`, s.d.ts(now), limit)
		if err != nil {
			return fmt.Errorf("sqlstore: expire uploads: %w", err)
		}
		var ids, reservations []string
		for rows.Next() {
			var id, res string
			if err := rows.Scan(&id, &res); err != nil {
				rows.Close()
				return fmt.Errorf("sqlstore: expire uploads: %w", err)
			}
			ids, reservations = append(ids, id), append(reservations, res)
		}
		if err := rows.Close(); err != nil {
			return fmt.Errorf("sqlstore: expire uploads: %w", err)
		}
		if err := rows.Err(); err != nil {
			return fmt.Errorf("sqlstore: expire uploads: %w", err)
		}
		n = len(ids)
		// A reservation lapses when its upload expires, so it no longer
		// counts; only one renewed past that is deleted here. The lapsed
		// ones are left to Reserve and SweepReservations, which delete
		// only lapsed ones: the sets never overlap, so this transaction
		// never waits on theirs, nor they on it, whatever the order of
		// the rows.
		err = inBatches(reservations, 2, func(batch []string, marks string) error {
			args := append([]any{s.d.ts(now)}, anys(batch)...)
			_, err := tx.ExecContext(ctx, `DELETE FROM quota_reservations
				WHERE expires_at > $1 AND id IN (`+marks+`)`, args...)
			return err
		})
		if err != nil {
			return fmt.Errorf("sqlstore: expire uploads: release reservations: %w", err)
		}
		return s.settleParts(ctx, tx, ids, now)
	})
	if err != nil {
		return 0, err
	}
	return n, nil
}

// settleParts makes the parts of uploads, which stopped being pending at
// now, RemovableParts.
func (s *Store) settleParts(ctx context.Context, tx *sql.Tx, uploads []string, now time.Time) error {
	err := inBatches(uploads, 2, func(batch []string, marks string) error {
		args := append([]any{s.d.ts(now)}, anys(batch)...)
		_, err := tx.ExecContext(ctx, `UPDATE upload_parts SET settled_at = $1
			WHERE upload_id IN (`+marks+`)`, args...)
		return err
	})
	if err != nil {
		return fmt.Errorf("sqlstore: settle parts: %w", err)
	}
	return nil
}

// RemovableParts returns at most limit parts of uploads that are no longer
// pending (completed, cancelled, or expired by ExpireUploads), those
// settled first first. Their objects may be deleted, then their rows with
// DeleteParts. A pending upload's parts are never returned, even past its
// ExpiresAt, until ExpireUploads has expired it.
func (s *Store) RemovableParts(ctx context.Context, limit int) (_ []files.UploadPart, err error) {
	defer s.classify(&err)
	if limit <= 0 {
		return nil, nil
	}
	rows, err := s.r.QueryContext(ctx, `SELECT id, upload_id, bytes, object_key, created_at FROM upload_parts
		WHERE settled_at IS NOT NULL ORDER BY settled_at LIMIT $1`, limit)
	if err != nil {
		return nil, fmt.Errorf("sqlstore: removable parts: %w", err)
	}
	defer rows.Close()
	var out []files.UploadPart
	for rows.Next() {
		var p files.UploadPart
		if err := rows.Scan(&p.ID, &p.UploadID, &p.Bytes, &p.ObjectKey, timeCol{&p.CreatedAt}); err != nil {
			return nil, fmt.Errorf("sqlstore: removable parts: %w", err)
		}
		out = append(out, p)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlstore: removable parts: %w", err)
	}
	return out, nil
}

// DeleteParts removes the rows of the parts ids, in one transaction;
// missing ones are ignored. Only parts of uploads that are no longer
// pending are removed: a pending upload's part stays, since its upload
// counts it and its object is still to be assembled.
func (s *Store) DeleteParts(ctx context.Context, ids []string) (err error) {
	defer s.classify(&err)
	if len(ids) == 0 {
		return nil
	}
	return s.inTx(ctx, func(tx *sql.Tx) error {
		err := inBatches(ids, 1, func(batch []string, marks string) error {
			_, err := tx.ExecContext(ctx, `DELETE FROM upload_parts
				WHERE settled_at IS NOT NULL AND id IN (`+marks+`)`, anys(batch)...)
			return err
		})
		if err != nil {
			return fmt.Errorf("sqlstore: delete parts: %w", err)
		}
		return nil
	})
}

// KnownParts returns which of objectKeys are the object of a part row, of
// any upload: the sweeper leaves those to RemovableParts.
func (s *Store) KnownParts(ctx context.Context, objectKeys []string) (_ map[string]bool, err error) {
	defer s.classify(&err)
	known := make(map[string]bool, len(objectKeys))
	err = inBatches(objectKeys, 1, func(batch []string, marks string) error {
		rows, err := s.r.QueryContext(ctx, `SELECT object_key FROM upload_parts
			WHERE object_key IN (`+marks+`)`, anys(batch)...)
		if err != nil {
			return err
		}
		return scanKeys(rows, known)
	})
	if err != nil {
		return nil, fmt.Errorf("sqlstore: known parts: %w", err)
	}
	return known, nil
}

// inBatches calls fn with the values in batches of at most renewBatch,
// each with its parameter list ("$first, $first+1, …"), so no statement
// passes the databases' bounds on parameters.
func inBatches(values []string, first int, fn func(batch []string, marks string) error) error {
	for start := 0; start < len(values); start += renewBatch {
		batch := values[start:min(start+renewBatch, len(values))]
		var marks strings.Builder
		for i := range batch {
			if i > 0 {
				marks.WriteString(", ")
			}
			marks.WriteByte('$')
			marks.WriteString(strconv.Itoa(first + i))
		}
		if err := fn(batch, marks.String()); err != nil {
			return err
		}
	}
	return nil
}

func anys(values []string) []any {
	out := make([]any, len(values))
	for i, v := range values {
		out[i] = v
	}
	return out
}
