package sqlstore

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"errors"
	"fmt"

	"github.com/aigateway/gateway/keys"
	"github.com/aigateway/gateway/workspace"
)

const keyByIDQuery = `SELECT id, user_id, name, role, workspace_id, models, hash, disabled, created_at
	FROM api_keys WHERE id = $1`

// EnsureUser records userID if it is new. It is idempotent and safe to call
// concurrently for the same user.
func (s *Store) EnsureUser(ctx context.Context, userID string) (err error) {
	defer s.classify(&err)
	if userID == "" {
		return invalidf("empty user id")
	}
	_, err = s.w.ExecContext(ctx,
		`INSERT INTO users (id, created_at) VALUES ($1, $2) ON CONFLICT (id) DO NOTHING`,
		userID, s.d.ts(micro(s.now())))
	if err != nil {
		return fmt.Errorf("sqlstore: ensure user: %w", err)
	}
	return nil
}

// CreateKey stores k. k.UserID must have been recorded with EnsureUser
// (ErrUserNotFound otherwise); a non-empty k.WorkspaceID must be a workspace
// of that same user (workspace.ErrNotFound otherwise, which is also what a
// workspace id of an unknown user gets). A reused k.ID is
// ErrConflict. CreatedAt is stored to the microsecond.
func (s *Store) CreateKey(ctx context.Context, k keys.APIKey) (err error) {
	defer s.classify(&err)
	if k.ID == "" || k.UserID == "" {
		return invalidf("key id and user id are required")
	}
	if !k.Role.Valid() {
		return invalidf("unknown role %q", k.Role)
	}
	var ws any
	if k.WorkspaceID != "" {
		id, ok := canonicalUUID(k.WorkspaceID)
		if !ok {
			return workspace.ErrNotFound
		}
		ws = id
	}
	models, err := listArg(k.Models)
	if err != nil {
		return fmt.Errorf("sqlstore: create key: %w", err)
	}
	return s.inTx(ctx, func(tx *sql.Tx) error {
		if ws != nil {
			// A workspace never changes owner, so checking before the insert
			// cannot race; the foreign key covers its existence.
			var n int
			if err := tx.QueryRowContext(ctx,
				`SELECT COUNT(*) FROM workspaces WHERE id = $1 AND created_by = $2`, ws, k.UserID).Scan(&n); err != nil {
				return fmt.Errorf("sqlstore: create key: %w", err)
			}
			if n == 0 {
				return workspace.ErrNotFound
			}
		}
		_, err := tx.ExecContext(ctx,
			`INSERT INTO api_keys (id, user_id, name, role, workspace_id, models, hash, disabled, created_at)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`,
			k.ID, k.UserID, k.Name, string(k.Role), ws, models, k.Hash[:], k.Disabled, s.d.ts(micro(k.CreatedAt)))
		switch s.d.violation(err) {
		case violationNone:
		case violationPrimaryKey:
			return fmt.Errorf("create key: %w", ErrConflict)
		case violationForeignKey:
			return ErrUserNotFound
		}
		if err != nil {
			return fmt.Errorf("sqlstore: create key: %w", err)
		}
		return nil
	})
}

// KeyByID returns the key with the public id, or keys.ErrKeyNotFound. It
// is one prepared primary-key lookup on a read connection.
func (s *Store) KeyByID(ctx context.Context, id string) (_ keys.APIKey, err error) {
	defer s.classify(&err)
	var (
		k    keys.APIKey
		role string
		ws   sql.NullString
		hash []byte
	)
	err = s.keyByID.QueryRowContext(ctx, id).Scan(
		&k.ID, &k.UserID, &k.Name, &role, &ws, listCol{&k.Models}, &hash, &k.Disabled, timeCol{&k.CreatedAt})
	if errors.Is(err, sql.ErrNoRows) {
		return keys.APIKey{}, keys.ErrKeyNotFound
	}
	if err != nil {
		return keys.APIKey{}, fmt.Errorf("sqlstore: key by id: %w", err)
	}
	if len(hash) != sha256.Size {
		return keys.APIKey{}, fmt.Errorf("sqlstore: key %s: stored hash has %d bytes", k.ID, len(hash))
	}
	k.Role = keys.Role(role)
	k.WorkspaceID = ws.String
	copy(k.Hash[:], hash)
	return k, nil
}
