package sqlstore

import (
	"context"
	"database/sql"
	"fmt"
	"time"
)

// SignOut records that the console session id was signed out; the record
// lasts until the session would have expired. Records already past that
// are dropped on the way (sign-outs are rare; no sweeper pass is needed).
func (s *Store) SignOut(ctx context.Context, id string, expires time.Time) (err error) {
	defer s.classify(&err)
	now := s.d.ts(micro(s.now()))
	return s.inTx(ctx, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, `INSERT INTO console_signouts (session_id, expires_at) VALUES ($1, $2)
			ON CONFLICT (session_id) DO NOTHING`, id, s.d.ts(micro(expires))); err != nil {
			return fmt.Errorf("sqlstore: sign out: %w", err)
		}
		if _, err := tx.ExecContext(ctx, `DELETE FROM console_signouts WHERE session_id IN
			(SELECT session_id FROM console_signouts WHERE expires_at < $1 LIMIT 100)`, now); err != nil {
			return fmt.Errorf("sqlstore: sign out: %w", err)
		}
		return nil
	})
}

// SignedOut reports whether the console session id was signed out.
func (s *Store) SignedOut(ctx context.Context, id string) (_ bool, err error) {
	defer s.classify(&err)
	var n int
	err = s.r.QueryRowContext(ctx, `SELECT COUNT(*) FROM console_signouts WHERE session_id = $1`, id).Scan(&n)
	if err != nil {
		return false, fmt.Errorf("sqlstore: signed out: %w", err)
	}
	return n > 0, nil
}
