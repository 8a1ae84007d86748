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
// out of order waits for the next pass.
//
// On PostgreSQL (migration 0018) it first keeps the day partitions of
// usage_reports (keepPartitions: those ahead created, those wholly before
// cutoff dropped), then deletes at most limit ids of usage_report_ids
// and at most limit raw rows left before cutoff, those of the day cutoff
// falls in and any of the DEFAULT partition, and returns the larger
// count: the raw rows of a dropped day are not counted. The partitions
// have no index on received_at (every insert would pay for it): the rows
// left are found by scanning the one day's partition, whose oldest rows
// come first.
func (s *Store) PruneReports(ctx context.Context, cutoff time.Time, limit int) (n int, err error) {
	defer s.classify(&err)
	if s.d.name == DriverPostgres {
		return s.prunePostgres(ctx, cutoff, limit)
	}
	return s.pruneExec(ctx, `DELETE FROM usage_reports WHERE rowid IN (SELECT rowid FROM usage_reports ORDER BY rowid LIMIT $2)
		AND received_at < $1`, cutoff, limit)
}

func (s *Store) prunePostgres(ctx context.Context, cutoff time.Time, limit int) (int, error) {
	if err := s.keepPartitions(ctx, cutoff); err != nil {
		return 0, fmt.Errorf("sqlstore: keep usage report partitions: %w", err)
	}
	ids, err := s.pruneExec(ctx, `DELETE FROM usage_report_ids WHERE ctid = ANY(ARRAY(
		SELECT ctid FROM usage_report_ids WHERE received_at < $1 LIMIT $2))`, cutoff, limit)
	if err != nil {
		return 0, err
	}
	// A ctid names a row within its partition only.
	raw, err := s.pruneExec(ctx, `DELETE FROM usage_reports u USING (
		SELECT tableoid AS t, ctid AS c FROM usage_reports WHERE received_at < $1 LIMIT $2) AS old
		WHERE u.tableoid = old.t AND u.ctid = old.c AND u.received_at < $1`, cutoff, limit)
	return max(ids, raw), err
}

func (s *Store) pruneExec(ctx context.Context, query string, cutoff time.Time, limit int) (int, error) {
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
