package sqlstore

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/aigateway/gateway/internal/audit"
)

// SignOut records that the console session id was signed out; the record
// lasts until the session would have expired. Records already past that
// are dropped on the way (sign-outs are rare; no sweeper pass is needed).
//
// The sign-out is recorded in the audit log in the same transaction
// (console.sign_out, target the signed-in key: the actor's key hash, since
// the session id itself is not to be shown); signing out a session already
// signed out records nothing.
func (s *Store) SignOut(ctx context.Context, id string, expires time.Time) (err error) {
	defer s.classify(&err)
	now := s.d.ts(micro(s.now()))
	return s.inTx(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `INSERT INTO console_signouts (session_id, expires_at) VALUES ($1, $2)
			ON CONFLICT (session_id) DO NOTHING`, id, s.d.ts(micro(expires)))
		if err != nil {
			return fmt.Errorf("sqlstore: sign out: %w", err)
		}
		n, err := res.RowsAffected()
		if err != nil {
			return fmt.Errorf("sqlstore: sign out: %w", err)
		}
		if n > 0 {
			actor := audit.ActorFrom(ctx)
			if err := s.recordChange(ctx, tx, actor.UserID, audit.ConsoleSignOut, actor.KeyHash, nil); err != nil {
				return err
			}
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
