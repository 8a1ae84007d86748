package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/aigateway/gateway/internal/audit"
	"github.com/aigateway/gateway/internal/invalid"
	"github.com/aigateway/gateway/internal/money"
	"github.com/aigateway/gateway/policy/spend"
	"github.com/aigateway/gateway/workspace"
)

var _ spend.Store = (*Store)(nil)

// KeysOf returns, of ids, the keys of userID with their workspace ("" for
// none).
func (s *Store) KeysOf(ctx context.Context, userID string, ids []string) (_ map[string]string, err error) {
	defer s.classify(&err)
	ids = slices.Compact(slices.Sorted(slices.Values(ids)))
	out := make(map[string]string, len(ids))
	for start := 0; start < len(ids); start += renewBatch {
		batch := ids[start:min(start+renewBatch, len(ids))]
		args := []any{userID}
		marks := make([]string, len(batch))
		for i, id := range batch {
			args = append(args, id)
			marks[i] = fmt.Sprintf("$%d", i+2)
		}
		rows, err := s.r.QueryContext(ctx, `SELECT id, workspace_id FROM api_keys
			WHERE user_id = $1 AND id IN (`+strings.Join(marks, ", ")+`)`, args...)
		if err != nil {
			return nil, fmt.Errorf("sqlstore: keys of user: %w", err)
		}
		for rows.Next() {
			var id string
			var ws sql.NullString
			if err := rows.Scan(&id, &ws); err != nil {
				rows.Close()
				return nil, fmt.Errorf("sqlstore: keys of user: %w", err)
			}
			out[id] = canonicalOr(ws.String)
		}
		err = rows.Err()
		rows.Close()
		if err != nil {
			return nil, fmt.Errorf("sqlstore: keys of user: %w", err)
		}
	}
	return out, nil
}

// canonicalOr is a stored workspace id in canonical form ("" stays "").
func canonicalOr(id string) string {
	if c, ok := canonicalUUID(id); ok {
		return c
	}
	return id
}

// errUsageOverflow refuses a batch that would carry a key's daily sum
// past what it holds: the caller's mistake (spend.MaxCost makes it take
// millions of reports), answered as a batch refused, not a fault.
func errUsageOverflow() error {
	return invalid.One("reports", "would carry a key's usage past the largest sum kept")
}

func nullString(s string) any {
	if s == "" {
		return nil
	}
	return s
}

// KeyUsage returns the usage of each key in ids in the windows of w: from
// its running totals, one row a key whatever its history, for a key that
// keeps them (one with a limit, now or before); summed from its daily
// rollups for the others, which nothing else reads.
func (s *Store) KeyUsage(ctx context.Context, ids []string, w spend.Windows) (_ map[string]spend.Usage, err error) {
	defer s.classify(&err)
	out := make(map[string]spend.Usage, len(ids))
	if len(ids) == 0 {
		return out, nil
	}
	args := make([]any, len(ids))
	marks := make([]string, len(ids))
	for i, id := range ids {
		args[i] = id
		marks[i] = fmt.Sprintf("$%d", i+1)
	}
	in := strings.Join(marks, ", ")
	rows, err := s.r.QueryContext(ctx, `SELECT t.scope_id, `+totalsOf+` FROM usage_totals t
		WHERE t.kind = 'key' AND t.scope_id IN (`+in+`)`, args...)
	if err != nil {
		return nil, fmt.Errorf("sqlstore: key usage: %w", err)
	}
	defer rows.Close()
	kept := make(map[string]bool, len(ids))
	for rows.Next() {
		var id string
		var t spend.Totals
		if err := rows.Scan(append([]any{&id}, totalsCols(&t)...)...); err != nil {
			return nil, fmt.Errorf("sqlstore: key usage: %w", err)
		}
		kept[id] = true
		if t != (spend.Totals{}) {
			out[id] = t.Usage(w)
		}
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlstore: key usage: %w", err)
	}
	if len(kept) == len(ids) {
		return out, nil
	}
	return out, s.rollupUsage(ctx, ids, kept, w, out)
}

// rollupUsage adds to out the usage in w of the keys of ids not kept,
// summed from their rollups (by the rollups' primary key, key first).
func (s *Store) rollupUsage(ctx context.Context, ids []string, kept map[string]bool, w spend.Windows, out map[string]spend.Usage) error {
	monthEnd := spend.Day(time.Unix(w.Monthly*86400, 0).UTC().AddDate(0, 1, 0))
	args := []any{w.Daily, w.Weekly, w.Weekly + 7, w.Monthly, monthEnd}
	var marks []string
	for _, id := range ids {
		if !kept[id] {
			args = append(args, id)
			marks = append(marks, fmt.Sprintf("$%d", len(args)))
		}
	}
	sum := func(cond string, byok bool) string {
		if byok {
			cond = "u.byok AND " + cond
		}
		return `CAST(COALESCE(SUM(CASE WHEN ` + cond + ` THEN u.cost ELSE 0 END), 0) AS BIGINT)`
	}
	daily, weekly, monthly := `u.day = $1`, `u.day >= $2 AND u.day < $3`, `u.day >= $4 AND u.day < $5`
	rows, err := s.r.QueryContext(ctx, `SELECT u.key_id, CAST(SUM(u.cost) AS BIGINT), `+sum(daily, false)+`, `+sum(weekly, false)+`,
		`+sum(monthly, false)+`, `+sum("true", true)+`, `+sum(daily, true)+`, `+sum(weekly, true)+`, `+sum(monthly, true)+`
		FROM usage_rollups u WHERE u.key_id IN (`+strings.Join(marks, ", ")+`) GROUP BY u.key_id`, args...)
	if err != nil {
		return fmt.Errorf("sqlstore: key usage: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var id string
		var u spend.Usage
		if err := rows.Scan(&id, (*int64)(&u.Total), (*int64)(&u.Daily), (*int64)(&u.Weekly), (*int64)(&u.Monthly),
			(*int64)(&u.BYOKTotal), (*int64)(&u.BYOKDaily), (*int64)(&u.BYOKWeekly), (*int64)(&u.BYOKMonthly)); err != nil {
			return fmt.Errorf("sqlstore: key usage: %w", err)
		}
		if u != (spend.Usage{}) {
			out[id] = u
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("sqlstore: key usage: %w", err)
	}
	return nil
}

// DailyUsage sums scope's usage per day from first to last, in one
// grouped query on usage_rollups: by its primary key (key_id, day, ...)
// for one key, by usage_rollups_workspace for a workspace, both for a user (the days of
// its workspaces, which keep the rows of its deleted keys, and of the keys
// it holds outside any workspace).
func (s *Store) DailyUsage(ctx context.Context, scope spend.DailyScope, first, last int64) (_ []spend.DaySum, err error) {
	defer s.classify(&err)
	var (
		where string
		arg   any
	)
	switch {
	case scope.KeyID != "":
		where, arg = `u.key_id = $3`, scope.KeyID
	case scope.WorkspaceID != "":
		ws, ok := canonicalUUID(scope.WorkspaceID)
		if !ok {
			return nil, nil
		}
		where, arg = `u.workspace_id = $3`, ws
	default:
		where, arg = `(u.workspace_id IN (SELECT id FROM workspaces WHERE created_by = $3)
			OR u.key_id IN (SELECT id FROM api_keys WHERE user_id = $3))`, scope.UserID
	}
	rows, err := s.r.QueryContext(ctx, `SELECT u.day, CAST(SUM(u.cost) AS BIGINT),
		CAST(SUM(CASE WHEN u.byok THEN u.cost ELSE 0 END) AS BIGINT)
		FROM usage_rollups u WHERE u.day >= $1 AND u.day <= $2 AND `+where+`
		GROUP BY u.day ORDER BY u.day`, first, last, arg)
	if err != nil {
		return nil, fmt.Errorf("sqlstore: daily usage: %w", err)
	}
	defer rows.Close()
	var out []spend.DaySum
	for rows.Next() {
		var d spend.DaySum
		if err := rows.Scan(&d.Day, (*int64)(&d.Cost), (*int64)(&d.BYOK)); err != nil {
			return nil, fmt.Errorf("sqlstore: daily usage: %w", err)
		}
		out = append(out, d)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlstore: daily usage: %w", err)
	}
	return out, nil
}

// Standings returns every key with a limit and every budget with their
// usage in the windows of w, from the running totals.
func (s *Store) Standings(ctx context.Context, w spend.Windows) (_ []spend.KeyStanding, _ []spend.BudgetStanding, err error) {
	defer s.classify(&err)
	c, err := s.StandingsSince(ctx, 0, true)
	if err != nil {
		return nil, nil, err
	}
	ks := make([]spend.KeyStanding, 0, len(c.Keys))
	for _, k := range c.Keys {
		ks = append(ks, spend.KeyStanding{KeyID: k.KeyID, Limit: k.Limit, Reset: k.Reset, IncludeBYOK: k.IncludeBYOK, Usage: k.Totals.Usage(w)})
	}
	var bs []spend.BudgetStanding
	for _, ws := range c.Workspaces {
		for _, b := range ws.Budgets {
			bs = append(bs, spend.BudgetStanding{Budget: b, IncludeBYOK: ws.IncludeBYOK, Usage: ws.Totals.Usage(w)})
		}
	}
	return ks, bs, nil
}

func budgetCols(b *spend.Budget) []any {
	return []any{&b.WorkspaceID, (*string)(&b.Interval), &b.ID, (*int64)(&b.Limit), timeCol{&b.CreatedAt}, timeCol{&b.UpdatedAt}}
}

const budgetColumns = `workspace_id, reset_interval, id, limit_micros, created_at, updated_at`

// Budgets returns workspaceID's budgets and its include_byok_in_budgets;
// workspace.ErrNotFound for no such workspace.
func (s *Store) Budgets(ctx context.Context, workspaceID string) (_ []spend.Budget, _ bool, err error) {
	defer s.classify(&err)
	ws, ok := canonicalUUID(workspaceID)
	if !ok {
		return nil, false, workspace.ErrNotFound
	}
	var byok bool
	err = s.r.QueryRowContext(ctx, `SELECT include_byok_in_budgets FROM workspaces WHERE id = $1`, ws).Scan(&byok)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, false, workspace.ErrNotFound
	}
	if err != nil {
		return nil, false, fmt.Errorf("sqlstore: budgets: %w", err)
	}
	rows, err := s.r.QueryContext(ctx, `SELECT `+budgetColumns+` FROM workspace_budgets WHERE workspace_id = $1`, ws)
	if err != nil {
		return nil, false, fmt.Errorf("sqlstore: budgets: %w", err)
	}
	defer rows.Close()
	var out []spend.Budget
	for rows.Next() {
		var b spend.Budget
		if err := rows.Scan(budgetCols(&b)...); err != nil {
			return nil, false, fmt.Errorf("sqlstore: budgets: %w", err)
		}
		b.WorkspaceID, b.ID = canonicalOr(b.WorkspaceID), canonicalOr(b.ID)
		out = append(out, b)
	}
	if err := rows.Err(); err != nil {
		return nil, false, fmt.Errorf("sqlstore: budgets: %w", err)
	}
	return out, byok, nil
}

// PutBudget creates or replaces b's interval budget under the workspace's
// row lock, after check accepts it beside the others, and records it in the
// audit log in the same transaction (budget.set, target the workspace, the
// interval's old and new limit and include_byok_in_budgets if it changed),
// shown to the workspace's owner when the actor has no user.
func (s *Store) PutBudget(ctx context.Context, b spend.Budget, includeBYOK *bool, check func(map[spend.Interval]money.Micros) error) (_ spend.Budget, created bool, err error) {
	defer s.classify(&err)
	ws, ok := canonicalUUID(b.WorkspaceID)
	if !ok || !b.Interval.Valid() {
		return spend.Budget{}, false, workspace.ErrNotFound
	}
	var stored spend.Budget
	err = s.inTx(ctx, func(tx *sql.Tx) error {
		var (
			owner   string
			oldBYOK bool
		)
		err := tx.QueryRowContext(ctx, `SELECT created_by, include_byok_in_budgets FROM workspaces WHERE id = $1`+s.d.forUpdate,
			ws).Scan(&owner, &oldBYOK)
		if errors.Is(err, sql.ErrNoRows) {
			return workspace.ErrNotFound
		}
		if err != nil {
			return fmt.Errorf("sqlstore: put budget: %w", err)
		}
		rows, err := tx.QueryContext(ctx, `SELECT `+budgetColumns+` FROM workspace_budgets WHERE workspace_id = $1`, ws)
		if err != nil {
			return fmt.Errorf("sqlstore: put budget: %w", err)
		}
		set := map[spend.Interval]money.Micros{}
		var prior *spend.Budget
		for rows.Next() {
			var o spend.Budget
			if err := rows.Scan(budgetCols(&o)...); err != nil {
				rows.Close()
				return fmt.Errorf("sqlstore: put budget: %w", err)
			}
			if o.Interval == b.Interval {
				prior = &o
				continue
			}
			set[o.Interval] = o.Limit
		}
		err = rows.Err()
		rows.Close()
		if err != nil {
			return fmt.Errorf("sqlstore: put budget: %w", err)
		}
		if err := check(set); err != nil {
			return err
		}
		stored = b
		stored.WorkspaceID = ws
		if prior != nil {
			stored.ID, stored.CreatedAt = canonicalOr(prior.ID), prior.CreatedAt
			_, err = tx.ExecContext(ctx, `UPDATE workspace_budgets SET limit_micros = $3, updated_at = $4
				WHERE workspace_id = $1 AND reset_interval = $2`, ws, string(b.Interval), int64(b.Limit), s.d.ts(micro(b.UpdatedAt)))
		} else {
			created = true
			_, err = tx.ExecContext(ctx, `INSERT INTO workspace_budgets (`+budgetColumns+`) VALUES ($1, $2, $3, $4, $5, $6)`,
				ws, string(b.Interval), b.ID, int64(b.Limit), s.d.ts(micro(b.CreatedAt)), s.d.ts(micro(b.UpdatedAt)))
		}
		if err != nil {
			return fmt.Errorf("sqlstore: put budget: %w", err)
		}
		var oldLimit *money.Micros
		if prior != nil {
			oldLimit = &prior.Limit
		}
		changes := []audit.Change{}
		if c, ok := audit.Diff(string(b.Interval), oldLimit, b.Limit); ok {
			changes = append(changes, c)
		}
		if includeBYOK != nil {
			if _, err := tx.ExecContext(ctx, `UPDATE workspaces SET include_byok_in_budgets = $2, updated_at = $3
				WHERE id = $1 AND include_byok_in_budgets <> $2`, ws, *includeBYOK, s.d.ts(micro(b.UpdatedAt))); err != nil {
				return fmt.Errorf("sqlstore: put budget: %w", err)
			}
			if c, ok := audit.Diff("include_byok_in_budgets", oldBYOK, *includeBYOK); ok {
				changes = append(changes, c)
			}
		}
		return s.recordChange(ctx, tx, owner, audit.BudgetSet, ws, changes)
	})
	return stored, created, err
}

// DeleteBudget removes workspaceID's budget of iv, or spend.ErrNoBudget,
// and records it in the audit log in the same transaction (budget.delete,
// target the workspace, the interval's limit as it was).
func (s *Store) DeleteBudget(ctx context.Context, workspaceID string, iv spend.Interval) (err error) {
	defer s.classify(&err)
	ws, ok := canonicalUUID(workspaceID)
	if !ok {
		return spend.ErrNoBudget
	}
	return s.inTx(ctx, func(tx *sql.Tx) error {
		// The workspace's row lock first, as PutBudget takes it.
		var owner string
		err := tx.QueryRowContext(ctx, `SELECT created_by FROM workspaces WHERE id = $1`+s.d.forUpdate, ws).Scan(&owner)
		if errors.Is(err, sql.ErrNoRows) {
			return spend.ErrNoBudget
		}
		if err != nil {
			return fmt.Errorf("sqlstore: delete budget: %w", err)
		}
		var limit int64
		err = tx.QueryRowContext(ctx, `SELECT limit_micros FROM workspace_budgets
			WHERE workspace_id = $1 AND reset_interval = $2`, ws, string(iv)).Scan(&limit)
		if errors.Is(err, sql.ErrNoRows) {
			return spend.ErrNoBudget
		}
		if err != nil {
			return fmt.Errorf("sqlstore: delete budget: %w", err)
		}
		if _, err := tx.ExecContext(ctx, `DELETE FROM workspace_budgets WHERE workspace_id = $1 AND reset_interval = $2`,
			ws, string(iv)); err != nil {
			return fmt.Errorf("sqlstore: delete budget: %w", err)
		}
		old := money.Micros(limit)
		c, _ := audit.Diff(string(iv), &old, nil)
		return s.recordChange(ctx, tx, owner, audit.BudgetDelete, ws, []audit.Change{c})
	})
}
