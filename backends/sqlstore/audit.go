package sqlstore

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/aigateway/gateway/internal/audit"
)

var _ audit.Store = (*Store)(nil)

// recordChange writes the audit entry of a change made in tx, so the two
// commit or roll back together: a change whose entry cannot be written is
// not made. The actor is the one ctx carries (audit.System when none). The
// entry is shown to the actor's user or, when the actor has none (the CLI,
// the system), to owner, the user whose key or workspace was changed.
func (s *Store) recordChange(ctx context.Context, tx *sql.Tx, owner string, action audit.Action, target string, changes []audit.Change) error {
	actor := audit.ActorFrom(ctx)
	if actor.UserID == "" {
		actor.UserID = owner
	}
	return s.insertAudit(ctx, tx, audit.Entry{Actor: actor, Action: action, Target: target, Changes: changes})
}

// execer is a *sql.Tx or a *sql.DB.
type execer interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
}

// insertAudit writes e, with a fresh id and the store's clock when e has
// none.
func (s *Store) insertAudit(ctx context.Context, ex execer, e audit.Entry) error {
	if e.ID == "" {
		id, err := uuid.NewV7()
		if err != nil {
			return fmt.Errorf("sqlstore: audit entry id: %w", err)
		}
		e.ID = id.String()
	}
	if e.At.IsZero() {
		e.At = s.now()
	}
	changes := e.Changes
	if changes == nil {
		changes = []audit.Change{}
	}
	body, err := json.Marshal(changes)
	if err != nil {
		return fmt.Errorf("sqlstore: encode audit changes: %w", err)
	}
	a := e.Actor
	if _, err := ex.ExecContext(ctx, `INSERT INTO audit_log
		(id, at, user_id, key_hash, via, client_addr, request_id, action, target, changes)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)`,
		e.ID, s.d.ts(micro(e.At)), a.UserID, a.KeyHash, a.Via, a.ClientAddr, a.RequestID,
		string(e.Action), e.Target, string(body)); err != nil {
		return fmt.Errorf("sqlstore: write audit entry: %w", err)
	}
	return nil
}

// RecordAudit writes e on its own transaction, for actions that change
// nothing else in the store (a console sign-in, the first-run link's use).
// e.Actor is taken as given, and e.Actor.UserID is who will see it; a zero
// e.At is the store's clock and an empty e.ID a fresh one. An action
// outside audit.Actions is ErrInvalidArgument.
func (s *Store) RecordAudit(ctx context.Context, e audit.Entry) (err error) {
	defer s.classify(&err)
	if !e.Action.Valid() {
		return invalidf("unknown audit action %q", e.Action)
	}
	return s.insertAudit(ctx, s.w, e)
}

const auditColumns = `id, at, user_id, key_hash, via, client_addr, request_id, action, target, changes`

// AuditEntries returns at most q.Limit (audit.DefaultLimit when not
// positive, audit.MaxLimit at most) of q.UserID's entries matching q,
// newest first by (At, ID). Each filter is an exact match served by an
// index led by the user (migration 0019), so a page costs its own rows
// whatever the log's size. An empty q.UserID is ErrInvalidArgument: no
// caller may read every user's entries.
func (s *Store) AuditEntries(ctx context.Context, q audit.Query) (_ []audit.Entry, err error) {
	defer s.classify(&err)
	if q.UserID == "" {
		return nil, invalidf("audit entries need a user")
	}
	limit := q.Limit
	if limit <= 0 {
		limit = audit.DefaultLimit
	}
	limit = min(limit, audit.MaxLimit)
	where, args := []string{"user_id = $1"}, []any{q.UserID}
	add := func(cond string, v ...any) {
		n := make([]any, len(v))
		for i := range v {
			args = append(args, v[i])
			n[i] = len(args)
		}
		where = append(where, fmt.Sprintf(cond, n...))
	}
	if q.Target != "" {
		add("target = $%d", q.Target)
	}
	if q.Actor != "" {
		add("key_hash = $%d", q.Actor)
	}
	if q.Action != "" {
		add("action = $%d", string(q.Action))
	}
	if !q.Since.IsZero() {
		add("at >= $%d", s.d.ts(micro(q.Since)))
	}
	if q.After != nil {
		add("(at, id) < ($%d, $%d)", s.d.ts(micro(q.After.At)), q.After.ID)
	}
	args = append(args, limit)
	rows, err := s.r.QueryContext(ctx, `SELECT `+auditColumns+` FROM audit_log WHERE `+strings.Join(where, " AND ")+
		fmt.Sprintf(` ORDER BY at DESC, id DESC LIMIT $%d`, len(args)), args...)
	if err != nil {
		return nil, fmt.Errorf("sqlstore: audit entries: %w", err)
	}
	defer rows.Close()
	page := []audit.Entry{}
	for rows.Next() {
		var (
			e       audit.Entry
			action  string
			changes string
		)
		if err := rows.Scan(&e.ID, timeCol{&e.At}, &e.Actor.UserID, &e.Actor.KeyHash, &e.Actor.Via,
			&e.Actor.ClientAddr, &e.Actor.RequestID, &action, &e.Target, &changes); err != nil {
			return nil, fmt.Errorf("sqlstore: audit entries: %w", err)
		}
		e.Action = audit.Action(action)
		if err := json.Unmarshal([]byte(changes), &e.Changes); err != nil {
			return nil, fmt.Errorf("sqlstore: audit entry %s: decode changes: %w", e.ID, err)
		}
		page = append(page, e)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlstore: audit entries: %w", err)
	}
	return page, nil
}

// PruneAudit deletes at most limit entries recorded before cutoff, oldest
// first, in one short statement (the retention loop calls it batch after
// batch so the writer is never held long), and returns how many it
// deleted.
func (s *Store) PruneAudit(ctx context.Context, cutoff time.Time, limit int) (_ int, err error) {
	defer s.classify(&err)
	query := `DELETE FROM audit_log WHERE id IN
		(SELECT id FROM audit_log WHERE at < $1 ORDER BY at LIMIT $2)`
	if s.d.name == DriverPostgres {
		// The ids as an array: each is then found by the primary key,
		// where PostgreSQL may answer IN (subquery) by a hash join over
		// the whole table.
		query = `DELETE FROM audit_log WHERE id = ANY(ARRAY(
			SELECT id FROM audit_log WHERE at < $1 ORDER BY at LIMIT $2))`
	}
	res, err := s.w.ExecContext(ctx, query, s.d.ts(micro(cutoff)), limit)
	if err != nil {
		return 0, fmt.Errorf("sqlstore: prune audit log: %w", err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return 0, fmt.Errorf("sqlstore: prune audit log: %w", err)
	}
	return int(n), nil
}
