package sqlstore

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/aigateway/gateway/internal/jsonobj"
	"github.com/aigateway/gateway/internal/money"
	"github.com/aigateway/gateway/policy/spend"
)

// usageSQL is what the recording of usage says differently to each
// database: rows travel as one JSON argument the database unpacks.
type usageSQL struct {
	// reportRows selects usage_reports rows out of $1, received_at, and
	// $2, a JSON array of [user_id, id, key_id, workspace_id, cost, byok,
	// at, model, provider_name, endpoint_id, prompt_tokens,
	// completion_tokens, reasoning_tokens], in the array's order.
	reportRows string
	// plainRows is reportRows for reports that say nothing of what was
	// served: the arrays end at at, the columns after it keep their
	// defaults. Each value taken out of the JSON is a function call of the
	// database's: six fewer a report made a batch of 1,000 a third faster
	// on SQLite.
	plainRows string
	// inIDs is a subquery of the strings of the JSON array of the
	// parameter its %s names.
	inIDs string
	// rollupRows selects usage_rollups rows out of $1, a JSON array of
	// [key_id, day, model, provider_name, endpoint_id, byok,
	// workspace_id, requests, cost, prompt_tokens, completion_tokens,
	// reasoning_tokens], in the array's order.
	rollupRows string
	// totalsRows selects usage_totals rows out of $1, a JSON array of
	// [scope_id, kind, the 20 totals of totalsColumns], on SQLite marked
	// changed by $2, the sequence number (PostgreSQL marks them in
	// usage_changes: migration 0016).
	totalsRows string
}

var (
	// On SQLite the rows arrive as bytes, a BLOB, which SQLite would read
	// as its binary JSONB: the CAST makes them the text they are. "WHERE
	// true" tells SQLite's parser that an ON CONFLICT which follows belongs
	// to the INSERT, not to a join.
	sqliteUsage = usageSQL{
		reportRows: `SELECT value->>0, value->>1, value->>2, value->>3, value->>4, value->>5, value->>6, $1,
			value->>7, value->>8, value->>9, value->>10, value->>11, value->>12
			FROM jsonb_each(CAST($2 AS TEXT)) WHERE true`,
		plainRows: `SELECT value->>0, value->>1, value->>2, value->>3, value->>4, value->>5, value->>6, $1
			FROM jsonb_each(CAST($2 AS TEXT)) WHERE true`,
		inIDs: `SELECT value FROM json_each(CAST(%s AS TEXT))`,
		rollupRows: `SELECT value->>0, value->>1, value->>2, value->>3, value->>4, value->>5, value->>6,
			value->>7, value->>8, value->>9, value->>10, value->>11
			FROM jsonb_each(CAST($1 AS TEXT)) WHERE true`,
		totalsRows: `SELECT value->>0, value->>1, ` + jsonColumns("value->>%d", 2, totalsCount) + `, $2
			FROM jsonb_each(CAST($1 AS TEXT)) WHERE true`,
	}
	postgresUsage = usageSQL{
		reportRows: `SELECT r.e->>0, r.e->>1, r.e->>2, (r.e->>3)::uuid, (r.e->>4)::bigint, (r.e->>5)::boolean,
			(r.e->>6)::timestamptz, $1::timestamptz, r.e->>7, r.e->>8, r.e->>9,
			(r.e->>10)::bigint, (r.e->>11)::bigint, (r.e->>12)::bigint
			FROM jsonb_array_elements($2::jsonb) WITH ORDINALITY AS r(e, n) ORDER BY r.n`,
		plainRows: `SELECT r.e->>0, r.e->>1, r.e->>2, (r.e->>3)::uuid, (r.e->>4)::bigint, (r.e->>5)::boolean,
			(r.e->>6)::timestamptz, $1::timestamptz
			FROM jsonb_array_elements($2::jsonb) WITH ORDINALITY AS r(e, n) ORDER BY r.n`,
		inIDs: `SELECT jsonb_array_elements_text(%s::jsonb)`,
		rollupRows: `SELECT r.e->>0, (r.e->>1)::bigint, r.e->>2, r.e->>3, r.e->>4, (r.e->>5)::boolean,
			(r.e->>6)::uuid, (r.e->>7)::bigint, (r.e->>8)::bigint, (r.e->>9)::bigint, (r.e->>10)::bigint,
			(r.e->>11)::bigint
			FROM jsonb_array_elements($1::jsonb) WITH ORDINALITY AS r(e, n) ORDER BY r.n`,
		totalsRows: `SELECT r.e->>0, r.e->>1, ` + jsonColumns("(r.e->>%d)::bigint", 2, totalsCount) + `
			FROM jsonb_array_elements($1::jsonb) WITH ORDINALITY AS r(e, n) ORDER BY r.n`,
	}
)

// jsonColumns writes n columns of format, numbered from first.
func jsonColumns(format string, first, n int) string {
	cols := make([]string, n)
	for i := range cols {
		cols[i] = fmt.Sprintf(format, first+i)
	}
	return strings.Join(cols, ", ")
}

func (s *Store) usageSQL() *usageSQL {
	if s.d.name == DriverPostgres {
		return &postgresUsage
	}
	return &sqliteUsage
}

// totalsMaking is the advisory lock a recording holds shared on
// PostgreSQL, and the making of a running total (migration 0015) takes
// exclusively: a total made while a batch is being recorded would miss it
// (the batch finds no total to add to, the total's sums do not see the
// batch's rollups), so the making waits for the batches in flight, and
// those that follow find the total.
const totalsMaking = 7236805

// RecordUsageTotals stores the reports not stored before and adds those
// to the rollups and the running totals, in one transaction, and returns
// the totals it left (of the keys and workspaces that keep one): one insert that skips the ids already
// there (ON CONFLICT DO NOTHING, so a report a replica is storing at the
// same moment waits for it and is then skipped) and returns the new ones;
// when some were there, one read of them, to refuse a replay whose content
// differs (spend.ReplayConflictError, the transaction rolled back); then
// one upsert of the rollups; then the totals (addToTotals). Rows go in sorted order so concurrent batches
// lock in the same order and cannot deadlock.
//
// The reports travel as one JSON argument that the database unpacks
// (appendReportRows), not as parameters a row: a batch of 1,000 as
// thousands of boxed arguments, converted twice on the way to the driver,
// was most of the garbage of an ingest, and its collection slowed the
// lookups sharing the process. The rollups travel the same way.
func (s *Store) RecordUsageTotals(ctx context.Context, batch spend.Batch) (accepted int, touched spend.Touched, err error) {
	defer s.classify(&err)
	if len(batch.Reports) == 0 {
		return 0, touched, nil
	}
	sorted := make([]*spend.Report, len(batch.Reports))
	for i := range batch.Reports {
		sorted[i] = &batch.Reports[i]
	}
	slices.SortFunc(sorted, func(a, b *spend.Report) int { return strings.Compare(a.ID, b.ID) })
	served := slices.ContainsFunc(batch.Reports, func(r spend.Report) bool { return r.Served() })
	bp := reportBuffers.Get().(*[]byte)
	defer reportBuffers.Put(bp)
	rows, err := s.appendReportRows((*bp)[:0], batch, sorted, served)
	*bp = rows
	if err != nil {
		return 0, touched, err
	}
	received := s.d.ts(micro(s.now()))
	q := s.usageSQL()
	err = s.inTx(ctx, func(tx *sql.Tx) error {
		if s.d.name == DriverPostgres {
			if _, err := tx.ExecContext(ctx, `SELECT pg_advisory_xact_lock_shared($1)`, totalsMaking); err != nil {
				return fmt.Errorf("sqlstore: record usage: %w", err)
			}
		}
		query := q.insertQuery(served)
		if s.d.name == DriverPostgres {
			query = postgresInsertReports(served)
		}
		fresh, err := insertReports(ctx, tx, query, received, rows, sorted)
		if err != nil {
			return err
		}
		if len(fresh) < len(sorted) {
			if s.d.name == DriverPostgres {
				err = checkReplaysPostgres(ctx, tx, batch, fresh, received, rows, served)
			} else {
				err = s.checkReplays(ctx, tx, q, batch, fresh)
			}
			if err != nil {
				return err
			}
		}
		accepted = len(fresh)
		if err := s.addToRollups(ctx, tx, q, batch.Workspaces, fresh); err != nil {
			return err
		}
		touched, err = s.addToTotals(ctx, tx, q, batch.Workspaces, fresh)
		return err
	})
	if err != nil {
		return 0, spend.Touched{}, err
	}
	return accepted, touched, nil
}

// insertQuery is insertReports' statement on SQLite, where usage_reports
// is keyed by user and id.
func (q *usageSQL) insertQuery(served bool) string {
	if served {
		return `INSERT INTO usage_reports (user_id, id, key_id, workspace_id, cost, byok, at, received_at,
			model, provider_name, endpoint_id, prompt_tokens, completion_tokens, reasoning_tokens) ` + q.reportRows +
			` ON CONFLICT (user_id, id) DO NOTHING RETURNING id`
	}
	return `INSERT INTO usage_reports (user_id, id, key_id, workspace_id, cost, byok, at, received_at) ` + q.plainRows +
		` ON CONFLICT (user_id, id) DO NOTHING RETURNING id`
}

// insertReports inserts, with query, the reports of rows (sorted, as rows
// holds them) that are not stored yet and returns those, in order.
func insertReports(ctx context.Context, tx *sql.Tx, query string, received any, rows []byte, sorted []*spend.Report) ([]*spend.Report, error) {
	res, err := tx.QueryContext(ctx, query, received, rows)
	if err != nil {
		return nil, fmt.Errorf("sqlstore: record usage: %w", err)
	}
	defer res.Close()
	fresh := make([]*spend.Report, 0, len(sorted))
	var id sql.RawBytes // read in place: only looked up
	for res.Next() {
		if err := res.Scan(&id); err != nil {
			return nil, fmt.Errorf("sqlstore: record usage: %w", err)
		}
		i, found := slices.BinarySearchFunc(sorted, 0, func(r *spend.Report, _ int) int {
			return compareRaw(r.ID, id)
		})
		if !found {
			return nil, fmt.Errorf("sqlstore: record usage: the database returned a report not sent")
		}
		fresh = append(fresh, sorted[i])
	}
	if err := res.Err(); err != nil {
		return nil, fmt.Errorf("sqlstore: record usage: %w", err)
	}
	// RETURNING gives no order: the rollups lock in the reports' order.
	slices.SortFunc(fresh, func(a, b *spend.Report) int { return strings.Compare(a.ID, b.ID) })
	return fresh, nil
}

// checkReplays reads the stored reports of batch's ids that were not
// fresh and refuses the batch, naming the first in its order, when one's
// content differs from what was stored.
func (s *Store) checkReplays(ctx context.Context, tx *sql.Tx, q *usageSQL, batch spend.Batch, fresh []*spend.Report) error {
	isFresh := make(map[*spend.Report]bool, len(fresh))
	for _, r := range fresh {
		isFresh[r] = true
	}
	ids := []byte{'['}
	for i := range batch.Reports {
		if r := &batch.Reports[i]; !isFresh[r] {
			if len(ids) > 1 {
				ids = append(ids, ',')
			}
			ids = jsonobj.AppendString(ids, r.ID)
		}
	}
	ids = append(ids, ']')
	rows, err := tx.QueryContext(ctx, `SELECT id, key_id, cost, byok, at, model, provider_name, endpoint_id,
		prompt_tokens, completion_tokens, reasoning_tokens
		FROM usage_reports WHERE user_id = $1 AND id IN (`+fmt.Sprintf(q.inIDs, "$2")+`)`, batch.UserID, ids)
	if err != nil {
		return fmt.Errorf("sqlstore: compare replays: %w", err)
	}
	defer rows.Close()
	stored := map[string]spend.Report{}
	for rows.Next() {
		var r spend.Report
		if err := rows.Scan(&r.ID, &r.KeyID, (*int64)(&r.Cost), &r.BYOK, timeCol{&r.At}, &r.Model, &r.Provider,
			&r.Endpoint, &r.PromptTokens, &r.CompletionTokens, &r.ReasoningTokens); err != nil {
			return fmt.Errorf("sqlstore: compare replays: %w", err)
		}
		stored[r.ID] = r
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("sqlstore: compare replays: %w", err)
	}
	for i := range batch.Reports {
		r := &batch.Reports[i]
		if isFresh[r] {
			continue
		}
		was, ok := stored[r.ID]
		replay := *r
		replay.At = micro(r.At)
		if !ok || !replay.SameContent(&was) {
			return &spend.ReplayConflictError{ID: r.ID, Index: i}
		}
	}
	return nil
}

// compareRaw is strings.Compare(s, string(b)) without copying b: the
// compiler converts in place for the comparison operators.
func compareRaw(s string, b []byte) int {
	switch {
	case s < string(b):
		return -1
	case s > string(b):
		return 1
	}
	return 0
}

// reportBuffers recycles the buffers appendReportRows and the rollups
// write into: the argument is handed to the driver as bytes (each copies it
// into its own buffer), so a batch leaves no copy of itself behind.
var reportBuffers = sync.Pool{New: func() any { return new([]byte) }}

// appendReportRows appends reports, of batch, as the JSON array
// usageSQL.reportRows reads (plainRows without served), in order, on
// PostgreSQL each with its digest last. Identifiers must be valid UTF-8, as
// PostgreSQL's TEXT requires; report ids are printable ASCII by then, and
// the names of what was served were checked valid by the domain.
func (s *Store) appendReportRows(b []byte, batch spend.Batch, reports []*spend.Report, served bool) ([]byte, error) {
	if !utf8.ValidString(batch.UserID) {
		return b, invalidf("usage reports of user %q: identifiers must be UTF-8", batch.UserID)
	}
	b = append(b, '[')
	for i, r := range reports {
		ws := batch.Workspaces[r.KeyID]
		if !utf8.ValidString(r.ID) || !utf8.ValidString(r.KeyID) || !utf8.ValidString(ws) ||
			!utf8.ValidString(r.Model) || !utf8.ValidString(r.Provider) || !utf8.ValidString(r.Endpoint) {
			return b, invalidf("usage report %q: identifiers must be UTF-8", r.ID)
		}
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, '[')
		b = jsonobj.AppendString(b, batch.UserID)
		b = append(b, ',')
		b = jsonobj.AppendString(b, r.ID)
		b = append(b, ',')
		b = jsonobj.AppendString(b, r.KeyID)
		b = append(b, ',')
		b = appendNullString(b, ws)
		b = append(b, ',')
		b = strconv.AppendInt(b, int64(r.Cost), 10)
		b = append(b, ',')
		b = strconv.AppendBool(b, r.BYOK)
		b = append(b, ',')
		b = s.d.appendTS(b, micro(r.At))
		if served {
			b = appendServed(b, r.Model, r.Provider, r.Endpoint, r.PromptTokens, r.CompletionTokens, r.ReasoningTokens)
		}
		if s.d.name == DriverPostgres {
			b = appendDigest(append(b, ','), r)
		}
		b = append(b, ']')
	}
	return append(b, ']'), nil
}

// appendServed appends what was served, each after a comma: the model,
// provider and endpoint, then the three counts of tokens.
func appendServed(b []byte, model, provider, endpoint string, prompt, completion, reasoning int64) []byte {
	for _, s := range [...]string{model, provider, endpoint} {
		b = append(b, ',')
		b = jsonobj.AppendString(b, s)
	}
	for _, n := range [...]int64{prompt, completion, reasoning} {
		b = append(b, ',')
		b = strconv.AppendInt(b, n, 10)
	}
	return b
}

func appendNullString(b []byte, s string) []byte {
	if s == "" {
		return append(b, "null"...)
	}
	return jsonobj.AppendString(b, s)
}

// rollupKey is a row of usage_rollups: what a key spent on one UTC day on
// one model, provider and endpoint, with or without its own provider key.
type rollupKey struct {
	key                       string
	day                       int64
	model, provider, endpoint string
	byok                      bool
}

func compareRollupKeys(a, b rollupKey) int {
	if c := strings.Compare(a.key, b.key); c != 0 {
		return c
	}
	if a.day != b.day {
		return int(a.day - b.day)
	}
	if c := strings.Compare(a.model, b.model); c != 0 {
		return c
	}
	if c := strings.Compare(a.provider, b.provider); c != 0 {
		return c
	}
	if c := strings.Compare(a.endpoint, b.endpoint); c != 0 {
		return c
	}
	switch {
	case a.byok == b.byok:
		return 0
	case b.byok:
		return -1
	}
	return 1
}

type rollupSum struct {
	workspace                     string
	requests                      int64
	cost                          money.Micros
	prompt, completion, reasoning int64
}

// addToRollups adds reports to usage_rollups in one upsert; workspaces
// maps their keys to their workspaces.
func (s *Store) addToRollups(ctx context.Context, tx *sql.Tx, q *usageSQL, workspaces map[string]string, reports []*spend.Report) error {
	if len(reports) == 0 {
		return nil
	}
	sums := map[rollupKey]*rollupSum{}
	for _, r := range reports {
		k := rollupKey{r.KeyID, spend.Day(r.At), r.Model, r.Provider, r.Endpoint, r.BYOK}
		d := sums[k]
		if d == nil {
			d = &rollupSum{workspace: workspaces[r.KeyID]}
			sums[k] = d
		}
		var ok bool
		if d.cost, ok = d.cost.Add(r.Cost); !ok {
			return errUsageOverflow()
		}
		d.requests++
		d.prompt += r.PromptTokens
		d.completion += r.CompletionTokens
		d.reasoning += r.ReasoningTokens
	}
	order := make([]rollupKey, 0, len(sums))
	for k := range sums {
		order = append(order, k)
	}
	slices.SortFunc(order, compareRollupKeys)
	bp := reportBuffers.Get().(*[]byte)
	defer reportBuffers.Put(bp)
	b := append((*bp)[:0], '[')
	for i, k := range order {
		d := sums[k]
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, '[')
		b = jsonobj.AppendString(b, k.key)
		b = append(b, ',')
		b = strconv.AppendInt(b, k.day, 10)
		for _, s := range [...]string{k.model, k.provider, k.endpoint} {
			b = append(b, ',')
			b = jsonobj.AppendString(b, s)
		}
		b = append(b, ',')
		b = strconv.AppendBool(b, k.byok)
		b = append(b, ',')
		b = appendNullString(b, d.workspace)
		for _, n := range [...]int64{d.requests, int64(d.cost), d.prompt, d.completion, d.reasoning} {
			b = append(b, ',')
			b = strconv.AppendInt(b, n, 10)
		}
		b = append(b, ']')
	}
	b = append(b, ']')
	*bp = b
	if _, err := tx.ExecContext(ctx, `INSERT INTO usage_rollups (key_id, day, model, provider_name, endpoint_id, byok,
			workspace_id, requests, cost, prompt_tokens, completion_tokens, reasoning_tokens) `+q.rollupRows+`
		ON CONFLICT (key_id, day, model, provider_name, endpoint_id, byok) DO UPDATE SET
			requests = usage_rollups.requests + excluded.requests,
			cost = usage_rollups.cost + excluded.cost,
			prompt_tokens = usage_rollups.prompt_tokens + excluded.prompt_tokens,
			completion_tokens = usage_rollups.completion_tokens + excluded.completion_tokens,
			reasoning_tokens = usage_rollups.reasoning_tokens + excluded.reasoning_tokens`, b); err != nil {
		if s.d.violation(err) == violationOutOfRange {
			return errUsageOverflow()
		}
		return fmt.Errorf("sqlstore: add usage: %w", err)
	}
	return nil
}
