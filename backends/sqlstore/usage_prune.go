package sqlstore

import (
	"context"
	"fmt"
	"time"

	"github.com/aigateway/gateway/policy/spend"
)

var _ spend.Pruner = (*Store)(nil)

// PruneReports deletes at most limit raw reports that arrived before
// cutoff. On SQLite the oldest rows are the lowest rowids (each insert
// takes the next), so the delete looks at the first limit of them and
// needs no index on received_at, which every insert would pay for; a row
// out of order waits for the next pass. PostgreSQL reads them from
// usage_reports_received.
func (s *Store) PruneReports(ctx context.Context, cutoff time.Time, limit int) (n int, err error) {
	defer s.classify(&err)
	query := `DELETE FROM usage_reports WHERE rowid IN (SELECT rowid FROM usage_reports ORDER BY rowid LIMIT $2)
		AND received_at < $1`
	if s.d.name == DriverPostgres {
		query = `DELETE FROM usage_reports WHERE ctid = ANY(ARRAY(
			SELECT ctid FROM usage_reports WHERE received_at < $1 LIMIT $2))`
	}
	res, err := s.w.ExecContext(ctx, query, s.d.ts(micro(cutoff)), limit)
	if err != nil {
		return 0, fmt.Errorf("sqlstore: prune usage reports: %w", err)
	}
	deleted, err := res.RowsAffected()
	if err != nil {
		return 0, fmt.Errorf("sqlstore: prune usage reports: %w", err)
	}
	return int(deleted), nil
}
