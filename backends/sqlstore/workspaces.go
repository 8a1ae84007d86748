package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"go.uber.org/zap"

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
// in the same transaction. If (UserID, Key) already has a record younger than
// workspace.IdempotencyTTL, nothing is created and that record is returned as
// prior; an older one is replaced. Concurrent calls with one key wait for
// each other (PostgreSQL: the idempotency insert blocks on the other
// transaction's row until it ends; SQLite: the one writer), so at most one
// creates and the others get its record. When the creation fails (slug
// taken) the record is not kept, so a retry is decided afresh. A zero
// idem.CreatedAt is set to the store's clock.
func (s *Store) CreateWorkspace(ctx context.Context, w workspace.Workspace, idem *workspace.Idempotency) (*workspace.Idempotency, error) {
	if id, ok := canonicalUUID(w.ID); !ok || id != w.ID {
		return nil, invalidf("workspace id %q is not a canonical UUID", w.ID)
	}
	if w.CreatedBy == "" || w.Slug == "" {
		return nil, invalidf("workspace created_by and slug are required")
	}
	if idem != nil && (idem.UserID != w.CreatedBy || idem.Key == "") {
		return nil, invalidf("idempotency record must name the creating user and a key")
	}
	keyIDs, err := listArg(w.IOLoggingAPIKeyIDs)
	if err != nil {
		return nil, fmt.Errorf("sqlstore: create workspace: %w", err)
	}

	var prior *workspace.Idempotency
	err = s.inTx(ctx, func(tx *sql.Tx) error {
		if idem != nil {
			p, err := s.claimIdempotency(ctx, tx, *idem)
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
		return nil
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
// creating transaction, best effort, so it can neither fail a create nor
// hold locks inside it.
func (s *Store) expireIdempotency(ctx context.Context, userID string) {
	cutoff := s.d.ts(micro(s.now()).Add(-workspace.IdempotencyTTL))
	if _, err := s.w.ExecContext(ctx,
		`DELETE FROM idempotency WHERE user_id = $1 AND created_at <= $2`, userID, cutoff); err != nil {
		s.log.Warn("expiring idempotency records failed", zap.Error(err))
	}
}

// claimIdempotency writes the record for idem, unless an unexpired one
// exists: then it returns that one and writes nothing.
//
// The upsert is one statement so the claim is atomic: on PostgreSQL a
// competing transaction's uncommitted row makes it wait until that
// transaction ends, then see the row (or, after a rollback, claim the key).
// Its WHERE replaces only an expired record.
func (s *Store) claimIdempotency(ctx context.Context, tx *sql.Tx, idem workspace.Idempotency) (*workspace.Idempotency, error) {
	now := micro(s.now())
	created := now
	if !idem.CreatedAt.IsZero() {
		created = micro(idem.CreatedAt)
	}
	cutoff := s.d.ts(now.Add(-workspace.IdempotencyTTL))
	body := idem.Body
	if body == nil {
		body = []byte{}
	}
	res, err := tx.ExecContext(ctx, `INSERT INTO idempotency (user_id, idem_key, request_hash, status, body, created_at)
		VALUES ($1, $2, $3, $4, $5, $6)
		ON CONFLICT (user_id, idem_key) DO UPDATE SET
			request_hash = excluded.request_hash, status = excluded.status,
			body = excluded.body, created_at = excluded.created_at
		WHERE idempotency.created_at <= $7`,
		idem.UserID, idem.Key, idem.RequestHash, idem.Status, body, s.d.ts(created), cutoff)
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
	p := workspace.Idempotency{UserID: idem.UserID, Key: idem.Key}
	err = tx.QueryRowContext(ctx,
		`SELECT request_hash, status, body, created_at FROM idempotency WHERE user_id = $1 AND idem_key = $2`,
		idem.UserID, idem.Key).Scan(&p.RequestHash, &p.Status, &p.Body, timeCol{&p.CreatedAt})
	if err != nil {
		return nil, fmt.Errorf("sqlstore: read idempotency record: %w", err)
	}
	return &p, nil
}

// WorkspaceByID returns the workspace id owned by userID, or
// workspace.ErrNotFound (also for another user's workspace and for an id
// that is not a UUID).
func (s *Store) WorkspaceByID(ctx context.Context, userID, id string) (workspace.Workspace, error) {
	id, ok := canonicalUUID(id)
	if !ok {
		return workspace.Workspace{}, workspace.ErrNotFound
	}
	return s.workspaceWhere(ctx, `id = $1 AND created_by = $2`, id, userID)
}

// WorkspaceBySlug returns userID's workspace with slug, or
// workspace.ErrNotFound.
func (s *Store) WorkspaceBySlug(ctx context.Context, userID, slug string) (workspace.Workspace, error) {
	return s.workspaceWhere(ctx, `created_by = $1 AND slug = $2`, userID, slug)
}

func (s *Store) workspaceWhere(ctx context.Context, where string, args ...any) (workspace.Workspace, error) {
	var w workspace.Workspace
	err := s.r.QueryRowContext(ctx, `SELECT `+workspaceColumns+` FROM workspaces WHERE `+where, args...).Scan(
		&w.ID, &w.Name, &w.Slug, &w.Description, &w.DefaultTextModel, &w.DefaultImageModel,
		&w.DefaultProviderSort, &w.DefaultGuardrailID, &w.CreatedBy, timeCol{&w.CreatedAt},
		nullTimeCol{&w.UpdatedAt}, &w.IncludeBYOKInBudgets, listCol{&w.IOLoggingAPIKeyIDs},
		&w.IOLoggingSamplingRate, &w.IsDataDiscountLoggingEnabled, &w.IsObservabilityBroadcastEnabled,
		&w.IsObservabilityIOLoggingEnabled)
	if errors.Is(err, sql.ErrNoRows) {
		return workspace.Workspace{}, workspace.ErrNotFound
	}
	if err != nil {
		return workspace.Workspace{}, fmt.Errorf("sqlstore: read workspace: %w", err)
	}
	return w, nil
}
