package sqlstore

import (
	"context"
	"crypto/md5"
	"database/sql"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/aigateway/gateway/policy/spend"
)

// On PostgreSQL usage_reports is partitioned by the day a report arrived
// and has no key; usage_report_ids is the key of idempotency (migration
// 0018). postgresSent names the columns of the rows a batch sends, the
// rows of usageSQL.reportRows, or of plainRows with the defaults of what
// was not served, and each row's digest, so that the ids and the raw rows
// are made from one unpacking of the argument.
const postgresSent = `sent (user_id, id, key_id, workspace_id, cost, byok, at, received_at, model, provider_name,
	endpoint_id, prompt_tokens, completion_tokens, reasoning_tokens, digest)`

const (
	postgresPlainRows = `SELECT r.e->>0, r.e->>1, r.e->>2, (r.e->>3)::uuid, (r.e->>4)::bigint, (r.e->>5)::boolean,
	(r.e->>6)::timestamptz, $1::timestamptz, '', '', '', 0::bigint, 0::bigint, 0::bigint, (r.e->>7)::uuid
	FROM jsonb_array_elements($2::jsonb) WITH ORDINALITY AS r(e, n) ORDER BY r.n`
	postgresServedRows = `SELECT r.e->>0, r.e->>1, r.e->>2, (r.e->>3)::uuid, (r.e->>4)::bigint, (r.e->>5)::boolean,
	(r.e->>6)::timestamptz, $1::timestamptz, r.e->>7, r.e->>8, r.e->>9,
	(r.e->>10)::bigint, (r.e->>11)::bigint, (r.e->>12)::bigint, (r.e->>13)::uuid
	FROM jsonb_array_elements($2::jsonb) WITH ORDINALITY AS r(e, n) ORDER BY r.n`
)

func postgresSentRows(served bool) string {
	if served {
		return postgresServedRows
	}
	return postgresPlainRows
}

// appendDigest appends, as a JSON string, the digest of r's content but
// its time: the md5 of the string migration 0018's usage_report_digest
// makes of the stored columns, each text preceded by its length in bytes
// so that no two contents make the same string. The database made each
// digest in a batch a function call of over 3 µs, most of what the
// ids added to a batch of 1,000; Go's md5 takes a tenth of that.
func appendDigest(b []byte, r *spend.Report) []byte {
	var buf [256]byte
	d := buf[:0]
	text := func(s string) {
		d = strconv.AppendInt(d, int64(len(s)), 10)
		d = append(d, ',')
		d = append(d, s...)
		d = append(d, ',')
	}
	text(r.KeyID)
	d = strconv.AppendInt(d, int64(r.Cost), 10)
	if r.BYOK {
		d = append(d, ",t,"...)
	} else {
		d = append(d, ",f,"...)
	}
	text(r.Model)
	text(r.Provider)
	text(r.Endpoint)
	d = strconv.AppendInt(d, r.PromptTokens, 10)
	d = append(d, ',')
	d = strconv.AppendInt(d, r.CompletionTokens, 10)
	d = append(d, ',')
	d = strconv.AppendInt(d, r.ReasoningTokens, 10)
	sum := md5.Sum(d)
	b = append(b, '"')
	b = hex.AppendEncode(b, sum[:])
	return append(b, '"')
}

// postgresInsertReports is insertReports' statement on PostgreSQL: the ids
// first, skipping those there (a report a replica is storing at the same
// moment waits for it and is then skipped), then the raw rows of the
// fresh ones.
func postgresInsertReports(served bool) string {
	return `WITH ` + postgresSent + ` AS (` + postgresSentRows(served) + `),
		fresh AS (INSERT INTO usage_report_ids (user_id, id, received_at, at, digest)
			SELECT user_id, id, received_at, at, digest FROM sent
			ON CONFLICT (user_id, id) DO NOTHING RETURNING user_id, id),
		stored AS (INSERT INTO usage_reports (user_id, id, key_id, workspace_id, cost, byok, at, received_at, model,
				provider_name, endpoint_id, prompt_tokens, completion_tokens, reasoning_tokens)
			SELECT s.user_id, s.id, s.key_id, s.workspace_id, s.cost, s.byok, s.at, s.received_at, s.model,
				s.provider_name, s.endpoint_id, s.prompt_tokens, s.completion_tokens, s.reasoning_tokens
			FROM sent s JOIN fresh f ON f.user_id = s.user_id AND f.id = s.id)
		SELECT id FROM fresh`
}

// postgresReplays reads, for each report of a batch whose id is stored,
// when the stored report was served and whether its content but its time
// matches.
func postgresReplays(served bool) string {
	return `WITH ` + postgresSent + ` AS (` + postgresSentRows(served) + `)
		SELECT s.id, i.at, i.digest = s.digest
		FROM sent s JOIN usage_report_ids i ON i.user_id = s.user_id AND i.id = s.id`
}

// checkReplaysPostgres is checkReplays on PostgreSQL, where the raw row of
// a report may be in any partition: the id's row holds what a replay is
// compared with. rows are the batch's rows as RecordUsageTotals sent them.
func checkReplaysPostgres(ctx context.Context, tx *sql.Tx, batch spend.Batch, fresh []*spend.Report, received any, rows []byte, served bool) error {
	isFresh := make(map[*spend.Report]bool, len(fresh))
	for _, r := range fresh {
		isFresh[r] = true
	}
	res, err := tx.QueryContext(ctx, postgresReplays(served), received, rows)
	if err != nil {
		return fmt.Errorf("sqlstore: compare replays: %w", err)
	}
	defer res.Close()
	type stored struct {
		at   time.Time
		same bool
	}
	found := make(map[string]stored, len(batch.Reports)-len(fresh))
	for res.Next() {
		var id string
		var st stored
		if err := res.Scan(&id, timeCol{&st.at}, &st.same); err != nil {
			return fmt.Errorf("sqlstore: compare replays: %w", err)
		}
		found[id] = st
	}
	if err := res.Err(); err != nil {
		return fmt.Errorf("sqlstore: compare replays: %w", err)
	}
	for i := range batch.Reports {
		r := &batch.Reports[i]
		if isFresh[r] {
			continue
		}
		st, ok := found[r.ID]
		if !ok || !st.same || (r.AtGiven && !micro(r.At).Equal(st.at)) {
			return &spend.ReplayConflictError{ID: r.ID, Index: i}
		}
	}
	return nil
}

// usagePartitioning is the advisory lock under which one replica at a time
// creates and drops partitions of usage_reports.
const usagePartitioning = 7236806

// partitionsAhead is how many days past today get their partition before
// they begin, so that reports land in the DEFAULT partition only when the
// pruning has not run for days.
const partitionsAhead = 3

// partitionPrefix and partitionLayout name a day's partition:
// usage_reports_p20261128 holds the reports that arrived on 28 November
// 2026 (UTC).
const (
	partitionPrefix = "usage_reports_p"
	partitionLayout = "20060102"
)

// keepPartitions creates the partitions of today and partitionsAhead days
// after it and drops those wholly before cutoff, unless another replica is
// doing it. A partition created for a day the DEFAULT partition holds rows
// of takes them over. Dropping a partition waits for the recordings in
// flight and holds the next ones meanwhile: lock_timeout bounds that wait,
// and a drop that times out is tried again at the next pass.
//
// A pass of the pruning calls it before each batch: most find nothing to
// do from one read of the catalog, and take no lock.
func (s *Store) keepPartitions(ctx context.Context, cutoff time.Time) error {
	today := s.now().UTC().Truncate(24 * time.Hour)
	create, drop, err := partitionChanges(ctx, s.w, today, cutoff)
	if err != nil || len(create)+len(drop) == 0 {
		return err
	}
	return s.inTx(ctx, func(tx *sql.Tx) error {
		var mine bool
		if err := tx.QueryRowContext(ctx, `SELECT pg_try_advisory_xact_lock($1)`, usagePartitioning).Scan(&mine); err != nil || !mine {
			return err
		}
		if _, err := tx.ExecContext(ctx, `SET LOCAL lock_timeout = '2s'`); err != nil {
			return err
		}
		// Read again under the lock: another replica may have just
		// made the same changes.
		create, drop, err := partitionChanges(ctx, tx, today, cutoff)
		if err != nil {
			return err
		}
		for _, d := range create {
			if err := createPartition(ctx, tx, d); err != nil {
				return err
			}
		}
		for _, d := range drop {
			if _, err := tx.ExecContext(ctx, `DROP TABLE `+partitionPrefix+d.Format(partitionLayout)); err != nil {
				return err
			}
		}
		return nil
	})
}

type querier interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}

// partitionChanges reads the day partitions of usage_reports and returns
// the days from today to partitionsAhead after it that have none (but
// those a cutoff in the future would drop again), and the days of those
// wholly before cutoff.
func partitionChanges(ctx context.Context, db querier, today, cutoff time.Time) (create, drop []time.Time, err error) {
	rows, err := db.QueryContext(ctx, `SELECT c.relname FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
		WHERE i.inhparent = 'usage_reports'::regclass`)
	if err != nil {
		return nil, nil, err
	}
	defer rows.Close()
	days := map[time.Time]bool{}
	for rows.Next() {
		var name string
		if err := rows.Scan(&name); err != nil {
			return nil, nil, err
		}
		if day, ok := strings.CutPrefix(name, partitionPrefix); ok {
			if d, err := time.Parse(partitionLayout, day); err == nil {
				days[d] = true
				if !d.AddDate(0, 0, 1).After(cutoff) {
					drop = append(drop, d)
				}
			}
		}
	}
	if err := rows.Err(); err != nil {
		return nil, nil, err
	}
	for i := range partitionsAhead + 1 {
		if d := today.AddDate(0, 0, i); !days[d] && d.AddDate(0, 0, 1).After(cutoff) {
			create = append(create, d)
		}
	}
	return create, drop, nil
}

// createPartition creates day's partition as a table, moves into it the
// rows of day the DEFAULT partition holds (attaching a partition whose
// range has rows in the DEFAULT one fails), then attaches it.
func createPartition(ctx context.Context, tx *sql.Tx, day time.Time) error {
	name := partitionPrefix + day.Format(partitionLayout)
	from, to := day.Format(time.RFC3339), day.AddDate(0, 0, 1).Format(time.RFC3339)
	for _, q := range []string{
		`CREATE TABLE ` + name + ` (LIKE usage_reports INCLUDING DEFAULTS INCLUDING CONSTRAINTS)`,
		`WITH moved AS (DELETE FROM usage_reports_default WHERE received_at >= '` + from + `' AND received_at < '` + to + `'
			RETURNING *) INSERT INTO ` + name + ` SELECT * FROM moved`,
		`ALTER TABLE usage_reports ATTACH PARTITION ` + name + ` FOR VALUES FROM ('` + from + `') TO ('` + to + `')`,
	} {
		if _, err := tx.ExecContext(ctx, q); err != nil {
			return fmt.Errorf("partition %s: %w", name, err)
		}
	}
	return nil
}
