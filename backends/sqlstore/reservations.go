package sqlstore

import (
	"context"
	"database/sql"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/aigateway/gateway/files"
)

// renewBatch bounds the ids of one renewal statement (SQLite allows 32766
// parameters; PostgreSQL 65535).
const renewBatch = 500

// ReserveUpTo sets aside what is left of workspaceID's quota of limit
// bytes, at most bytes, for ttl; a *QuotaError when nothing is left. It
// decides like Reserve, under the same lock.
func (s *Store) ReserveUpTo(ctx context.Context, workspaceID string, bytes, limit int64, ttl time.Duration) (_ files.Reservation, err error) {
	defer s.classify(&err)
	return s.reserve(ctx, workspaceID, bytes, true, limit, ttl)
}

// Renew extends each unexpired reservation of ids to expire ttl from the
// store's clock, and returns those it extended. An expired reservation is
// not revived: Reserve may already have counted its bytes as free.
func (s *Store) Renew(ctx context.Context, ids []string, ttl time.Duration) (_ []string, err error) {
	defer s.classify(&err)
	if ttl <= 0 {
		return nil, invalidf("renew for %v", ttl)
	}
	now := micro(s.now())
	var renewed []string
	err = s.inTx(ctx, func(tx *sql.Tx) error {
		renewed = renewed[:0]
		for start := 0; start < len(ids); start += renewBatch {
			batch := ids[start:min(start+renewBatch, len(ids))]
			args := make([]any, 0, len(batch)+2)
			args = append(args, s.d.ts(now.Add(ttl)), s.d.ts(now))
			marks := make([]string, len(batch))
			for i, id := range batch {
				args = append(args, id)
				marks[i] = "$" + strconv.Itoa(i+3)
			}
			rows, err := tx.QueryContext(ctx, `UPDATE quota_reservations SET expires_at = $1
				WHERE expires_at > $2 AND id IN (`+strings.Join(marks, ", ")+`) RETURNING id`, args...)
			if err != nil {
				return fmt.Errorf("sqlstore: renew reservations: %w", err)
			}
			for rows.Next() {
				var id string
				if err := rows.Scan(&id); err != nil {
					rows.Close()
					return fmt.Errorf("sqlstore: renew reservations: %w", err)
				}
				renewed = append(renewed, id)
			}
			if err := rows.Close(); err != nil {
				return fmt.Errorf("sqlstore: renew reservations: %w", err)
			}
			if err := rows.Err(); err != nil {
				return fmt.Errorf("sqlstore: renew reservations: %w", err)
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return renewed, nil
}
