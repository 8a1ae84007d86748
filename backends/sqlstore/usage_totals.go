package sqlstore

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/aigateway/gateway/internal/jsonobj"
	"github.com/aigateway/gateway/internal/money"
	"github.com/aigateway/gateway/policy/keys"
	"github.com/aigateway/gateway/policy/spend"
)

var (
	_ spend.ChangeFeed     = (*Store)(nil)
	_ spend.TotalsRecorder = (*Store)(nil)
)

// totalsColumns are the sums of usage_totals, in the order totalsCols and
// appendTotals use.
const totalsColumns = `total, total_byok, d_start, d_cost, d_byok, d2_start, d2_cost, d2_byok,
	w_start, w_cost, w_byok, w2_start, w2_cost, w2_byok, m_start, m_cost, m_byok, m2_start, m2_cost, m2_byok`

const totalsCount = 20

// totalsOf selects the sums of usage_totals t, 0 where t has no row.
var totalsOf = func() string {
	var b strings.Builder
	for i, c := range strings.Split(totalsColumns, ",") {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "COALESCE(t.%s, 0)", strings.TrimSpace(c))
	}
	return b.String()
}()

func totalsCols(t *spend.Totals) []any {
	out := []any{(*int64)(&t.Total), (*int64)(&t.BYOKTotal)}
	for _, w := range []*[2]spend.WindowSum{&t.Daily, &t.Weekly, &t.Monthly} {
		for i := range w {
			out = append(out, &w[i].Start, (*int64)(&w[i].Cost), (*int64)(&w[i].BYOK))
		}
	}
	return out
}

func appendTotals(b []byte, t *spend.Totals) []byte {
	b = strconv.AppendInt(b, int64(t.Total), 10)
	b = append(b, ',')
	b = strconv.AppendInt(b, int64(t.BYOKTotal), 10)
	for _, w := range []*[2]spend.WindowSum{&t.Daily, &t.Weekly, &t.Monthly} {
		for _, s := range w {
			for _, n := range [...]int64{s.Start, int64(s.Cost), int64(s.BYOK)} {
				b = append(b, ',')
				b = strconv.AppendInt(b, n, 10)
			}
		}
	}
	return b
}

// scope is a row of usage_totals: a key's (16 hexadecimal characters) or
// a workspace's (a UUID), which never look alike.
type scope struct {
	id          string
	isWorkspace bool
}

// RecordUsage stores reports as RecordUsageTotals does.
func (s *Store) RecordUsage(ctx context.Context, batch spend.Batch) (accepted int, err error) {
	defer s.classify(&err)
	accepted, _, err = s.RecordUsageTotals(ctx, batch)
	return accepted, err
}

// addToTotals adds reports to the running totals of their keys and
// workspaces that have one (keys with a limit, workspaces with budgets:
// migration 0015) and returns the totals it left. The rows are read locked,
// in order, so that two replicas adding to one workspace take turns
// (SQLite's one writer already does); a batch of keys nobody enforces
// costs one read that finds nothing.
func (s *Store) addToTotals(ctx context.Context, tx *sql.Tx, q *usageSQL, workspaces map[string]string, reports []*spend.Report) (spend.Touched, error) {
	touched := spend.Touched{Keys: map[string]spend.Totals{}, Workspaces: map[string]spend.Totals{}}
	if len(reports) == 0 {
		return touched, nil
	}
	seen := map[string]bool{}
	var ids []string
	for _, r := range reports {
		if !seen[r.KeyID] {
			seen[r.KeyID] = true
			ids = append(ids, r.KeyID)
		}
		if ws := workspaces[r.KeyID]; ws != "" && !seen[ws] {
			seen[ws] = true
			ids = append(ids, ws)
		}
	}
	slices.Sort(ids)
	b := []byte{'['}
	for i, id := range ids {
		if i > 0 {
			b = append(b, ',')
		}
		b = jsonobj.AppendString(b, id)
	}
	b = append(b, ']')
	if err := readTotals(ctx, tx, q, b, s.d.forUpdate, touched); err != nil {
		return touched, err
	}
	if len(touched.Keys) == 0 && len(touched.Workspaces) == 0 {
		return touched, nil
	}
	// A batch is mostly a few keys' reports of one day: summed per key,
	// day and BYOK first, the totals take a few additions, not two a
	// report.
	type part struct {
		id          string
		isWorkspace bool
		day         int64
		byok        bool
	}
	sums := map[part]money.Micros{}
	add := func(p part, cost money.Micros) bool {
		var ok bool
		sums[p], ok = sums[p].Add(cost)
		return ok
	}
	for _, r := range reports {
		p := part{id: r.KeyID, day: spend.Day(r.At), byok: r.BYOK}
		if _, kept := touched.Keys[p.id]; kept && !add(p, r.Cost) {
			return touched, errUsageOverflow()
		}
		p.id, p.isWorkspace = workspaces[r.KeyID], true
		if _, kept := touched.Workspaces[p.id]; kept && p.id != "" && !add(p, r.Cost) {
			return touched, errUsageOverflow()
		}
	}
	for p, cost := range sums {
		m := touched.Keys
		if p.isWorkspace {
			m = touched.Workspaces
		}
		t := m[p.id]
		if !t.Add(p.day, cost, p.byok) {
			return touched, errUsageOverflow()
		}
		m[p.id] = t
	}
	scopes := make([]scope, 0, len(touched.Keys)+len(touched.Workspaces))
	for id := range touched.Keys {
		scopes = append(scopes, scope{id: id})
	}
	for id := range touched.Workspaces {
		scopes = append(scopes, scope{id: id, isWorkspace: true})
	}
	slices.SortFunc(scopes, func(a, b scope) int { return strings.Compare(a.id, b.id) })
	return touched, s.writeTotals(ctx, tx, q, scopes, touched)
}

func kindOf(sc scope) string {
	if sc.isWorkspace {
		return "workspace"
	}
	return "key"
}

// readTotals reads the totals of the scopes of ids (a JSON array) into
// touched, locking their rows (lock: the dialect's FOR UPDATE).
func readTotals(ctx context.Context, tx *sql.Tx, q *usageSQL, ids []byte, lock string, touched spend.Touched) error {
	query := `SELECT t.scope_id, t.kind, ` + totalsOf + ` FROM usage_totals t
		WHERE t.scope_id IN (` + fmt.Sprintf(q.inIDs, "$1") + `)`
	if lock != "" {
		query += ` ORDER BY t.scope_id` + lock
	}
	rows, err := tx.QueryContext(ctx, query, ids)
	if err != nil {
		return fmt.Errorf("sqlstore: read totals: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var id, kind string
		var t spend.Totals
		if err := rows.Scan(append([]any{&id, &kind}, totalsCols(&t)...)...); err != nil {
			return fmt.Errorf("sqlstore: read totals: %w", err)
		}
		if kind == "workspace" {
			touched.Workspaces[id] = t
		} else {
			touched.Keys[id] = t
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("sqlstore: read totals: %w", err)
	}
	return nil
}

// writeTotals writes the totals of scopes and marks them changed: on
// SQLite in their rows, on PostgreSQL in usage_changes, so that the totals,
// whose only index is their key, are updated in place (migration 0016).
func (s *Store) writeTotals(ctx context.Context, tx *sql.Tx, q *usageSQL, scopes []scope, touched spend.Touched) error {
	b := []byte{'['}
	for i, sc := range scopes {
		t := touched.Keys[sc.id]
		if sc.isWorkspace {
			t = touched.Workspaces[sc.id]
		}
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, '[')
		b = jsonobj.AppendString(b, sc.id)
		b = append(b, ',')
		b = jsonobj.AppendString(b, kindOf(sc))
		b = append(b, ',')
		b = appendTotals(b, &t)
		b = append(b, ']')
	}
	b = append(b, ']')
	var set strings.Builder
	for _, c := range strings.Split(totalsColumns, ",") {
		c = strings.TrimSpace(c)
		fmt.Fprintf(&set, "%s = excluded.%s, ", c, c)
	}
	if s.d.name == DriverPostgres {
		if _, err := tx.ExecContext(ctx, `INSERT INTO usage_totals (scope_id, kind, `+totalsColumns+`) `+q.totalsRows+`
			ON CONFLICT (scope_id) DO UPDATE SET `+strings.TrimSuffix(set.String(), ", "), b); err != nil {
			if s.d.violation(err) == violationOutOfRange {
				return errUsageOverflow()
			}
			return fmt.Errorf("sqlstore: add to totals: %w", err)
		}
		// The totals rows are locked already, in order: their marks
		// cannot deadlock.
		if _, err := tx.ExecContext(ctx, `INSERT INTO usage_changes (scope_id, changed)
			SELECT r.e->>0, txid_current() FROM jsonb_array_elements($1::jsonb) AS r(e)
			ON CONFLICT (scope_id) DO UPDATE SET changed = excluded.changed`, b); err != nil {
			return fmt.Errorf("sqlstore: add to totals: %w", err)
		}
		return nil
	}
	var next int64
	if err := tx.QueryRowContext(ctx, `SELECT COALESCE(MAX(changed), 0) + 1 FROM usage_totals`).Scan(&next); err != nil {
		return fmt.Errorf("sqlstore: add to totals: %w", err)
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO usage_totals (scope_id, kind, `+totalsColumns+`, changed) `+q.totalsRows+`
		ON CONFLICT (scope_id) DO UPDATE SET `+set.String()+`changed = excluded.changed`, b, next); err != nil {
		if s.d.violation(err) == violationOutOfRange {
			return errUsageOverflow()
		}
		return fmt.Errorf("sqlstore: add to totals: %w", err)
	}
	return nil
}

// StandingsSince reads the standings of keys with a limit and workspaces
// with budgets (all), or of those whose totals were marked changed since
// cursor, in one read-only transaction so that the cursor it returns is
// exact: on SQLite the next sequence number (writers are one and commit in
// order); on PostgreSQL the oldest transaction still running at the read
// (txid_snapshot_xmin), whose rows and those of every later one the next
// read takes again, since they may not be visible to this one.
func (s *Store) StandingsSince(ctx context.Context, cursor int64, all bool) (c spend.Changes, err error) {
	defer s.classify(&err)
	tx, err := s.r.BeginTx(ctx, &sql.TxOptions{ReadOnly: true, Isolation: s.snapshotIsolation()})
	if err != nil {
		return c, fmt.Errorf("sqlstore: standings: %w", err)
	}
	defer func() { _ = tx.Rollback() }()
	next := `SELECT COALESCE(MAX(changed), 0) + 1 FROM usage_totals`
	if s.d.name == DriverPostgres {
		next = `SELECT txid_snapshot_xmin(txid_current_snapshot())`
	}
	if err := tx.QueryRowContext(ctx, next).Scan(&c.Next); err != nil {
		return c, fmt.Errorf("sqlstore: standings: %w", err)
	}
	if c.Keys, err = s.keyChanges(ctx, tx, cursor, all); err != nil {
		return c, err
	}
	if c.Workspaces, err = s.workspaceChanges(ctx, tx, cursor, all); err != nil {
		return c, err
	}
	return c, nil
}

func (s *Store) snapshotIsolation() sql.IsolationLevel {
	if s.d.name == DriverPostgres {
		return sql.LevelRepeatableRead
	}
	return sql.LevelDefault
}

// changedRows names usage_totals t for a read of the rows changed since
// the cursor $1, and that condition: SQLite, not knowing the cursor when
// it plans, would walk the whole table rather than the index of what
// changed; PostgreSQL keeps the marks in usage_changes (migration 0016).
func (s *Store) changedRows() (from, since string) {
	if s.d.name == DriverSQLite {
		return `usage_totals t INDEXED BY usage_totals_changed`, `t.changed >= $1`
	}
	return `usage_changes c JOIN usage_totals t ON t.scope_id = c.scope_id`, `c.changed >= $1`
}

func (s *Store) keyChanges(ctx context.Context, tx *sql.Tx, cursor int64, all bool) ([]spend.KeyChange, error) {
	from, since := s.changedRows()
	query := `SELECT t.scope_id, k.limit_usd, k.limit_reset, COALESCE(k.include_byok_in_limit, false), ` + totalsOf + `
		FROM ` + from + ` LEFT JOIN api_keys k ON k.id = t.scope_id
		WHERE t.kind = 'key' AND ` + since
	args := []any{cursor}
	if all {
		query = `SELECT k.id, k.limit_usd, k.limit_reset, k.include_byok_in_limit, ` + totalsOf + `
			FROM api_keys k LEFT JOIN usage_totals t ON t.scope_id = k.id WHERE k.limit_usd IS NOT NULL`
		args = nil
	}
	rows, err := tx.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, fmt.Errorf("sqlstore: key standings: %w", err)
	}
	defer rows.Close()
	var out []spend.KeyChange
	for rows.Next() {
		var (
			k     spend.KeyChange
			limit *money.Micros
			reset sql.NullString
		)
		if err := rows.Scan(append([]any{&k.KeyID, microsCol{&limit}, &reset, &k.IncludeBYOK}, totalsCols(&k.Totals)...)...); err != nil {
			return nil, fmt.Errorf("sqlstore: key standings: %w", err)
		}
		if limit == nil {
			k.Gone = true
		} else {
			k.Limit, k.Reset = *limit, keys.Reset(reset.String)
		}
		out = append(out, k)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlstore: key standings: %w", err)
	}
	return out, nil
}

func (s *Store) workspaceChanges(ctx context.Context, tx *sql.Tx, cursor int64, all bool) ([]spend.WorkspaceChange, error) {
	wsOfScope, scopeOfBudget := `t.scope_id`, `b.workspace_id`
	if s.d.name == DriverPostgres {
		wsOfScope, scopeOfBudget = `CAST(t.scope_id AS UUID)`, `CAST(b.workspace_id AS TEXT)`
	}
	from, since := s.changedRows()
	cols := `w.include_byok_in_budgets, b.reset_interval, b.id, b.limit_micros, b.created_at, b.updated_at, ` + totalsOf
	query := `SELECT t.scope_id, ` + cols + `
		FROM ` + from + ` LEFT JOIN workspaces w ON w.id = ` + wsOfScope + `
		LEFT JOIN workspace_budgets b ON b.workspace_id = w.id
		WHERE t.kind = 'workspace' AND ` + since
	args := []any{cursor}
	if all {
		query = `SELECT ` + scopeOfBudget + `, ` + cols + `
			FROM workspace_budgets b JOIN workspaces w ON w.id = b.workspace_id
			LEFT JOIN usage_totals t ON t.scope_id = ` + scopeOfBudget
		args = nil
	}
	rows, err := tx.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, fmt.Errorf("sqlstore: budget standings: %w", err)
	}
	defer rows.Close()
	// A workspace comes a row per budget; no ORDER BY, which would have
	// SQLite walk every row in order rather than the changed ones.
	var out []spend.WorkspaceChange
	at := map[string]int{}
	for rows.Next() {
		var (
			id       string
			byok     sql.NullBool
			interval sql.NullString
			budgetID sql.NullString
			limit    sql.NullInt64
			created  *time.Time
			updated  *time.Time
			t        spend.Totals
		)
		if err := rows.Scan(append([]any{&id, &byok, &interval, &budgetID, &limit, nullTimeCol{&created}, nullTimeCol{&updated}},
			totalsCols(&t)...)...); err != nil {
			return nil, fmt.Errorf("sqlstore: budget standings: %w", err)
		}
		id = canonicalOr(id)
		i, ok := at[id]
		if !ok {
			i = len(out)
			at[id] = i
			out = append(out, spend.WorkspaceChange{WorkspaceID: id, IncludeBYOK: byok.Bool, Totals: t})
		}
		if !interval.Valid {
			continue
		}
		b := spend.Budget{ID: canonicalOr(budgetID.String), WorkspaceID: id, Interval: spend.Interval(interval.String),
			Limit: money.Micros(limit.Int64)}
		if created != nil && updated != nil {
			b.CreatedAt, b.UpdatedAt = *created, *updated
		}
		out[i].Budgets = append(out[i].Budgets, b)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlstore: budget standings: %w", err)
	}
	return out, nil
}
