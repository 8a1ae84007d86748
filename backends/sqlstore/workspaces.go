package sqlstore

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/aigateway/gateway/internal/audit"
	"github.com/aigateway/gateway/workspace"
)

const workspaceColumns = `id, name, slug, description, default_text_model, default_image_model,
	default_provider_sort, default_guardrail_id, created_by, created_at, updated_at,
	include_byok_in_budgets, io_logging_api_key_ids, io_logging_sampling_rate,
	is_data_discount_logging_enabled, is_observability_broadcast_enabled,
	is_observability_io_logging_enabled`

// CreateWorkspace inserts w, or returns workspace.ErrSlugTaken when
// w.CreatedBy already has w.Slug. The insert itself decides: of any number
// of concurrent creates of one slug, exactly one succeeds.
//
// w.ID must be a UUID in canonical lowercase form (ErrInvalidArgument
// otherwise; a reused id is ErrConflict) and w.CreatedBy a recorded user
// (ErrUserNotFound). Times are stored to the microsecond.
//
// With idem not nil (idem.UserID must be w.CreatedBy), the record is written
// in the same transaction, with w as its answer. If (UserID, Scope, Key)
// already has a record younger than workspace.IdempotencyTTL, nothing is
// created and that record is returned as prior; an older one is replaced. Concurrent calls with one key wait for
// each other (PostgreSQL: the idempotency insert blocks on the other
// transaction's row until it ends; SQLite: the one writer), so at most one
// creates and the others get its record. When the creation fails (slug
// taken) the record is not kept, so a retry is decided afresh. A zero
// idem.CreatedAt is set to the store's clock.
//
// The creation is recorded in the audit log in the same transaction
// (workspace.create, with the workspace's fields), shown to the actor's
// user or, when the actor has none, to w.CreatedBy; a replay records
// nothing.
func (s *Store) CreateWorkspace(ctx context.Context, w workspace.Workspace, idem *workspace.Idempotency) (_ *workspace.Idempotency, err error) {
	defer s.classify(&err)
	if id, ok := canonicalUUID(w.ID); !ok || id != w.ID {
		return nil, invalidf("workspace id %q is not a canonical UUID", w.ID)
	}
	if w.CreatedBy == "" || w.Slug == "" {
		return nil, invalidf("workspace created_by and slug are required")
	}
	if idem != nil && (idem.UserID != w.CreatedBy || idem.Key == "" || idem.Scope == "") {
		return nil, invalidf("idempotency record must name the creating user, a scope and a key")
	}
	keyIDs, err := listArg(w.IOLoggingAPIKeyIDs)
	if err != nil {
		return nil, fmt.Errorf("sqlstore: create workspace: %w", err)
	}

	var prior *workspace.Idempotency
	err = s.inTx(ctx, func(tx *sql.Tx) error {
		if idem != nil {
			p, err := s.claimIdempotency(ctx, tx, *idem, w)
			if err != nil || p != nil {
				prior = p
				return err
			}
		}
		_, err := tx.ExecContext(ctx, `INSERT INTO workspaces (`+workspaceColumns+`)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17)`,
			w.ID, w.Name, w.Slug, w.Description, w.DefaultTextModel, w.DefaultImageModel,
			w.DefaultProviderSort, w.DefaultGuardrailID, w.CreatedBy, s.d.ts(micro(w.CreatedAt)),
			s.d.nullTS(w.UpdatedAt), w.IncludeBYOKInBudgets, keyIDs, w.IOLoggingSamplingRate,
			w.IsDataDiscountLoggingEnabled, w.IsObservabilityBroadcastEnabled, w.IsObservabilityIOLoggingEnabled)
		switch s.d.violation(err) {
		case violationNone:
		case violationUnique:
			return workspace.ErrSlugTaken
		case violationPrimaryKey:
			return fmt.Errorf("create workspace: %w", ErrConflict)
		case violationForeignKey:
			return ErrUserNotFound
		}
		if err != nil {
			return fmt.Errorf("sqlstore: create workspace: %w", err)
		}
		return s.recordChange(ctx, tx, w.CreatedBy, audit.WorkspaceCreate, w.ID, created(workspaceFields(w)))
	})
	if err != nil {
		return nil, err
	}
	if idem != nil && prior == nil {
		s.expireIdempotency(ctx, idem.UserID)
	}
	return prior, nil
}

// expireIdempotency drops the user's expired idempotency records, which
// would otherwise pile up; lookups already ignore them. It runs after the
// writing transaction, best effort, so it can neither fail a request nor
// hold locks inside it.
func (s *Store) expireIdempotency(ctx context.Context, userID string) {
	cutoff := s.d.ts(micro(s.now()).Add(-workspace.IdempotencyTTL))
	if _, err := s.w.ExecContext(ctx,
		`DELETE FROM idempotency_records WHERE user_id = $1 AND created_at <= $2`, userID, cutoff); err != nil {
		s.log.Warn("expiring idempotency records failed", zap.Error(err))
	}
}

// claimIdempotency writes the record for idem with answer as its
// workspace, unless an unexpired one exists: then it returns that one and
// writes nothing. An update claims with a zero answer and settles it with
// settleIdempotency once it knows the result, in the same transaction.
func (s *Store) claimIdempotency(ctx context.Context, tx *sql.Tx, idem workspace.Idempotency, answer workspace.Workspace) (*workspace.Idempotency, error) {
	body, err := json.Marshal(answer)
	if err != nil {
		return nil, fmt.Errorf("sqlstore: encode idempotency record: %w", err)
	}
	prior, err := s.claimRecord(ctx, tx, idemRecord{
		userID: idem.UserID, scope: idem.Scope, key: idem.Key, requestHash: idem.RequestHash,
		answer: body, createdAt: idem.CreatedAt,
	}, workspace.IdempotencyTTL)
	if err != nil || prior == nil {
		return nil, err
	}
	p := workspace.Idempotency{UserID: idem.UserID, Scope: idem.Scope, Key: idem.Key,
		RequestHash: prior.requestHash, CreatedAt: prior.createdAt}
	if err := json.Unmarshal(prior.answer, &p.Workspace); err != nil {
		return nil, fmt.Errorf("sqlstore: decode idempotency record: %w", err)
	}
	return &p, nil
}

// idemRecord is a row of idempotency_records: the answer is the bytes the
// scope's owner keeps (a workspace's JSON, a created key's id and sealed
// secret).
type idemRecord struct {
	userID, scope, key, requestHash string
	answer                          []byte
	createdAt                       time.Time
}

// claimRecord writes rec unless an unexpired record (younger than ttl) of
// its (user, scope, key) exists: then it returns that one and writes
// nothing. A zero rec.createdAt is the store's clock.
//
// The upsert is one statement so the claim is atomic: on PostgreSQL a
// competing transaction's uncommitted row makes it wait until that
// transaction ends, then see the row (or, after a rollback, claim the key).
// Its WHERE replaces only an expired record.
func (s *Store) claimRecord(ctx context.Context, tx *sql.Tx, rec idemRecord, ttl time.Duration) (*idemRecord, error) {
	now := micro(s.now())
	created := now
	if !rec.createdAt.IsZero() {
		created = micro(rec.createdAt)
	}
	cutoff := s.d.ts(now.Add(-ttl))
	res, err := tx.ExecContext(ctx, `INSERT INTO idempotency_records
		(user_id, scope, idem_key, request_hash, workspace, created_at)
		VALUES ($1, $2, $3, $4, $5, $6)
		ON CONFLICT (user_id, scope, idem_key) DO UPDATE SET
			request_hash = excluded.request_hash, workspace = excluded.workspace,
			created_at = excluded.created_at
		WHERE idempotency_records.created_at <= $7`,
		rec.userID, rec.scope, rec.key, rec.requestHash, rec.answer, s.d.ts(created), cutoff)
	if s.d.violation(err) == violationForeignKey {
		return nil, ErrUserNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("sqlstore: claim idempotency key: %w", err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return nil, fmt.Errorf("sqlstore: claim idempotency key: %w", err)
	}
	if n > 0 {
		return nil, nil
	}
	p := idemRecord{userID: rec.userID, scope: rec.scope, key: rec.key}
	err = tx.QueryRowContext(ctx, `SELECT request_hash, workspace, created_at FROM idempotency_records
		WHERE user_id = $1 AND scope = $2 AND idem_key = $3`,
		rec.userID, rec.scope, rec.key).Scan(&p.requestHash, &p.answer, timeCol{&p.createdAt})
	if err != nil {
		return nil, fmt.Errorf("sqlstore: read idempotency record: %w", err)
	}
	return &p, nil
}

// settleIdempotency records answer as the result of the claimed idem.
func (s *Store) settleIdempotency(ctx context.Context, tx *sql.Tx, idem workspace.Idempotency, answer workspace.Workspace) error {
	body, err := json.Marshal(answer)
	if err != nil {
		return fmt.Errorf("sqlstore: encode idempotency record: %w", err)
	}
	if _, err := tx.ExecContext(ctx, `UPDATE idempotency_records SET workspace = $4
		WHERE user_id = $1 AND scope = $2 AND idem_key = $3`,
		idem.UserID, idem.Scope, idem.Key, body); err != nil {
		return fmt.Errorf("sqlstore: settle idempotency record: %w", err)
	}
	return nil
}

// WorkspaceByID returns the workspace id owned by userID, or
// workspace.ErrNotFound (also for another user's workspace and for an id
// that is not a UUID).
func (s *Store) WorkspaceByID(ctx context.Context, userID, id string) (_ workspace.Workspace, err error) {
	defer s.classify(&err)
	id, ok := canonicalUUID(id)
	if !ok {
		return workspace.Workspace{}, workspace.ErrNotFound
	}
	return s.workspaceWhere(ctx, `id = $1 AND created_by = $2`, id, userID)
}

// WorkspaceBySlug returns userID's workspace with slug, or
// workspace.ErrNotFound.
func (s *Store) WorkspaceBySlug(ctx context.Context, userID, slug string) (_ workspace.Workspace, err error) {
	defer s.classify(&err)
	return s.workspaceWhere(ctx, `created_by = $1 AND slug = $2`, userID, slug)
}

func (s *Store) workspaceWhere(ctx context.Context, where string, args ...any) (workspace.Workspace, error) {
	w, err := scanWorkspace(s.r.QueryRowContext(ctx, `SELECT `+workspaceColumns+` FROM workspaces WHERE `+where, args...))
	if errors.Is(err, sql.ErrNoRows) {
		return workspace.Workspace{}, workspace.ErrNotFound
	}
	if err != nil {
		return workspace.Workspace{}, fmt.Errorf("sqlstore: read workspace: %w", err)
	}
	return w, nil
}

// scanner is a *sql.Row or *sql.Rows.
type scanner interface{ Scan(dest ...any) error }

// scanWorkspace reads workspaceColumns, then into extra any columns after them.
func scanWorkspace(row scanner, extra ...any) (workspace.Workspace, error) {
	var w workspace.Workspace
	dest := append([]any{
		&w.ID, &w.Name, &w.Slug, &w.Description, &w.DefaultTextModel, &w.DefaultImageModel,
		&w.DefaultProviderSort, &w.DefaultGuardrailID, &w.CreatedBy, timeCol{&w.CreatedAt},
		nullTimeCol{&w.UpdatedAt}, &w.IncludeBYOKInBudgets, listCol{&w.IOLoggingAPIKeyIDs},
		&w.IOLoggingSamplingRate, &w.IsDataDiscountLoggingEnabled, &w.IsObservabilityBroadcastEnabled,
		&w.IsObservabilityIOLoggingEnabled,
	}, extra...)
	err := row.Scan(dest...)
	return w, err
}

// ListWorkspaces returns at most limit of userID's workspaces after skipping
// offset, ordered by created_at then id, and the user's total. The page and
// the total come from one statement (a window count), so they agree; only a
// page past the end needs a second query for the total.
func (s *Store) ListWorkspaces(ctx context.Context, userID string, offset, limit int) (_ []workspace.Workspace, _ int, err error) {
	defer s.classify(&err)
	if offset < 0 || limit < 1 {
		return nil, 0, invalidf("list workspaces: offset %d, limit %d", offset, limit)
	}
	rows, err := s.r.QueryContext(ctx, `SELECT `+workspaceColumns+`, COUNT(*) OVER ()
		FROM workspaces WHERE created_by = $1 ORDER BY created_at, id LIMIT $2 OFFSET $3`,
		userID, limit, offset)
	if err != nil {
		return nil, 0, fmt.Errorf("sqlstore: list workspaces: %w", err)
	}
	defer rows.Close()
	var (
		page  []workspace.Workspace
		total int
	)
	for rows.Next() {
		w, err := scanWorkspace(rows, &total)
		if err != nil {
			return nil, 0, fmt.Errorf("sqlstore: list workspaces: %w", err)
		}
		page = append(page, w)
	}
	if err := rows.Err(); err != nil {
		return nil, 0, fmt.Errorf("sqlstore: list workspaces: %w", err)
	}
	if len(page) == 0 && offset > 0 {
		if err := s.r.QueryRowContext(ctx,
			`SELECT COUNT(*) FROM workspaces WHERE created_by = $1`, userID).Scan(&total); err != nil {
			return nil, 0, fmt.Errorf("sqlstore: count workspaces: %w", err)
		}
	}
	return page, total, nil
}

// UpdateWorkspace writes the Set fields of u to userID's workspace ref, with
// updated_at = at, in one UPDATE of just those columns: concurrent updates
// of different fields never overwrite each other. An empty u writes nothing
// and returns the workspace as it is. A Set description with a nil Value
// stores "".
//
// The update is recorded in the audit log in the same transaction
// (workspace.update, with the old and new value of each field that
// changed). The old values are read after the row is locked (PostgreSQL;
// on SQLite the one writer), so they are those the UPDATE replaces, even
// when another update of other fields committed just before.
//
// Errors: workspace.ErrNotFound (no such workspace for userID),
// workspace.ErrSlugTaken (decided by the unique constraint),
// workspace.ErrDefaultSlug (the slug of the workspace whose slug is
// workspace.DefaultSlug would change; checked with the row locked, so two
// concurrent updates cannot together rename the default away).
//
// With idem not nil (idem.UserID must be userID), the key is claimed first,
// so a retry is replayed even when the first request renamed the slug it
// was addressed by; the record is then settled with the updated workspace in
// the same transaction, and not kept when the update fails.
func (s *Store) UpdateWorkspace(ctx context.Context, userID string, ref workspace.Ref, u workspace.UpdateRequest,
	at time.Time, idem *workspace.Idempotency) (_ workspace.Workspace, _ *workspace.Idempotency, err error) {
	defer s.classify(&err)
	if idem != nil && (idem.UserID != userID || idem.Key == "" || idem.Scope == "") {
		return workspace.Workspace{}, nil, invalidf("idempotency record must name the updating user, a scope and a key")
	}
	sets, args, err := updateColumns(u)
	if err != nil {
		return workspace.Workspace{}, nil, fmt.Errorf("sqlstore: update workspace: %w", err)
	}
	var (
		w     workspace.Workspace
		prior *workspace.Idempotency
	)
	err = s.inTx(ctx, func(tx *sql.Tx) error {
		if idem != nil {
			p, err := s.claimIdempotency(ctx, tx, *idem, workspace.Workspace{})
			if err != nil || p != nil {
				prior = p
				return err
			}
		}
		id, slug, err := s.resolve(ctx, tx, userID, ref, true)
		if err != nil {
			return err
		}
		if u.Slug.Set && u.Slug.Value != slug && slug == workspace.DefaultSlug {
			return workspace.ErrDefaultSlug
		}
		old, err := scanWorkspace(tx.QueryRowContext(ctx, `SELECT `+workspaceColumns+` FROM workspaces WHERE id = $1`, id))
		if err != nil {
			return fmt.Errorf("sqlstore: update workspace: %w", err)
		}
		w = old
		if len(sets) > 0 {
			args = append(args, s.d.ts(micro(at)), id)
			w, err = scanWorkspace(tx.QueryRowContext(ctx, fmt.Sprintf(`UPDATE workspaces SET %s, updated_at = $%d
				WHERE id = $%d RETURNING `+workspaceColumns, strings.Join(sets, ", "), len(args)-1, len(args)), args...))
			if s.d.violation(err) == violationUnique {
				return workspace.ErrSlugTaken
			}
			if err != nil {
				return fmt.Errorf("sqlstore: update workspace: %w", err)
			}
			if err := s.recordChange(ctx, tx, old.CreatedBy, audit.WorkspaceUpdate, id,
				changed(workspaceFields(old), workspaceFields(w))); err != nil {
				return err
			}
		}
		if idem != nil {
			return s.settleIdempotency(ctx, tx, *idem, w)
		}
		return nil
	})
	if err != nil {
		return workspace.Workspace{}, nil, err
	}
	if idem != nil && prior == nil {
		s.expireIdempotency(ctx, idem.UserID)
	}
	return w, prior, nil
}

// updateColumns lists "column = $n" for each Set field of u, with the
// arguments in order.
func updateColumns(u workspace.UpdateRequest) (sets []string, args []any, err error) {
	add := func(set bool, column string, v any) {
		if set {
			args = append(args, v)
			sets = append(sets, fmt.Sprintf("%s = $%d", column, len(args)))
		}
	}
	add(u.Name.Set, "name", u.Name.Value)
	add(u.Slug.Set, "slug", u.Slug.Value)
	if d := u.Description; d.Set {
		text := ""
		if d.Value != nil {
			text = *d.Value
		}
		add(true, "description", text)
	}
	add(u.DefaultTextModel.Set, "default_text_model", u.DefaultTextModel.Value)
	add(u.DefaultImageModel.Set, "default_image_model", u.DefaultImageModel.Value)
	add(u.DefaultProviderSort.Set, "default_provider_sort", u.DefaultProviderSort.Value)
	if ids := u.IOLoggingAPIKeyIDs; ids.Set {
		v, err := listArg(ids.Value)
		if err != nil {
			return nil, nil, err
		}
		add(true, "io_logging_api_key_ids", v)
	}
	add(u.IOLoggingSamplingRate.Set, "io_logging_sampling_rate", u.IOLoggingSamplingRate.Value)
	add(u.IsDataDiscountLoggingEnabled.Set, "is_data_discount_logging_enabled", u.IsDataDiscountLoggingEnabled.Value)
	add(u.IsObservabilityBroadcastEnabled.Set, "is_observability_broadcast_enabled", u.IsObservabilityBroadcastEnabled.Value)
	add(u.IsObservabilityIOLoggingEnabled.Set, "is_observability_io_logging_enabled", u.IsObservabilityIOLoggingEnabled.Value)
	return sets, args, nil
}

// resolve finds userID's workspace ref inside tx, the id first, then the
// slug (see workspace.Ref). With lock, on PostgreSQL, the row stays locked
// until tx ends.
func (s *Store) resolve(ctx context.Context, tx *sql.Tx, userID string, ref workspace.Ref, lock bool) (id, slug string, err error) {
	forUpdate := ""
	if lock {
		forUpdate = s.d.forUpdate
	}
	if canonical, ok := canonicalUUID(ref.ID); ok {
		err := tx.QueryRowContext(ctx, `SELECT id, slug FROM workspaces WHERE id = $1 AND created_by = $2`+forUpdate,
			canonical, userID).Scan(&id, &slug)
		if !errors.Is(err, sql.ErrNoRows) {
			if err != nil {
				return "", "", fmt.Errorf("sqlstore: find workspace: %w", err)
			}
			return id, slug, nil
		}
	}
	if ref.Slug == "" {
		return "", "", workspace.ErrNotFound
	}
	err = tx.QueryRowContext(ctx, `SELECT id, slug FROM workspaces WHERE created_by = $1 AND slug = $2`+forUpdate,
		userID, ref.Slug).Scan(&id, &slug)
	if errors.Is(err, sql.ErrNoRows) {
		return "", "", workspace.ErrNotFound
	}
	if err != nil {
		return "", "", fmt.Errorf("sqlstore: find workspace: %w", err)
	}
	return id, slug, nil
}

// DeleteWorkspace removes userID's workspace ref, its usage counter,
// expired reservations and stored provider keys (copies of keys the user
// holds at the provider, useless without the workspace), or returns
// *workspace.NotDeletableError and changes nothing: for the workspace whose
// slug is workspace.DefaultSlug, and while the workspace has files, API keys
// or unexpired quota reservations (uploads in progress).
//
// The transaction takes the workspace's quota lock (its usage row, made if
// missing) before anything else, as Reserve and Commit do, then the
// workspace row. So an upload's Commit either ran before (its file is
// counted and the delete refused) or runs after and finds no usage row; a
// Reserve after finds no workspace. Neither leaves a file in a deleted
// workspace. Taking the two locks in the uploads' order keeps PostgreSQL
// from deadlocking them against each other.
//
// The deletion is recorded in the audit log in the same transaction
// (workspace.delete, with the workspace's fields as they were).
func (s *Store) DeleteWorkspace(ctx context.Context, userID string, ref workspace.Ref) (err error) {
	defer s.classify(&err)
	now := micro(s.now())
	return s.inTx(ctx, func(tx *sql.Tx) error {
		// Unlocked: the usage row must be locked before the workspace row.
		id, _, err := s.resolve(ctx, tx, userID, ref, false)
		if err != nil {
			return err
		}
		if err := ensureUsage(ctx, tx, id); err != nil {
			return fmt.Errorf("sqlstore: delete workspace: %w", err)
		}
		if _, err := lockUsage(ctx, tx, s.d, id); errors.Is(err, sql.ErrNoRows) {
			return workspace.ErrNotFound // deleted since it was found
		} else if err != nil {
			return fmt.Errorf("sqlstore: delete workspace: %w", err)
		}
		_, slug, err := s.resolve(ctx, tx, userID, workspace.Ref{ID: id}, true)
		if err != nil {
			return err
		}
		if slug == workspace.DefaultSlug {
			return &workspace.NotDeletableError{Default: true}
		}
		var held workspace.NotDeletableError
		if err := tx.QueryRowContext(ctx, `SELECT
			(SELECT COUNT(*) FROM files WHERE workspace_id = $1),
			(SELECT COUNT(*) FROM api_keys WHERE workspace_id = $1),
			(SELECT COUNT(*) FROM quota_reservations WHERE workspace_id = $1 AND expires_at > $2)`,
			id, s.d.ts(now)).Scan(&held.Files, &held.Keys, &held.Uploads); err != nil {
			return fmt.Errorf("sqlstore: delete workspace: count what it holds: %w", err)
		}
		if held.Files > 0 || held.Keys > 0 || held.Uploads > 0 {
			return &held
		}
		for _, table := range []string{"quota_reservations", "workspace_usage", "byok_keys", "workspace_budgets", "deleted_files"} {
			if _, err := tx.ExecContext(ctx, `DELETE FROM `+table+` WHERE workspace_id = $1`, id); err != nil {
				return fmt.Errorf("sqlstore: delete workspace: %s: %w", table, err)
			}
		}
		old, err := scanWorkspace(tx.QueryRowContext(ctx, `SELECT `+workspaceColumns+` FROM workspaces WHERE id = $1`, id))
		if err != nil {
			return fmt.Errorf("sqlstore: delete workspace: %w", err)
		}
		if _, err := tx.ExecContext(ctx, `DELETE FROM workspaces WHERE id = $1`, id); err != nil {
			return fmt.Errorf("sqlstore: delete workspace: %w", err)
		}
		return s.recordChange(ctx, tx, old.CreatedBy, audit.WorkspaceDelete, id, removed(workspaceFields(old)))
	})
}
