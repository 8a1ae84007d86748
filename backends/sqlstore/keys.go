package sqlstore

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/aigateway/gateway/internal/audit"
	"github.com/aigateway/gateway/internal/money"
	"github.com/aigateway/gateway/policy/keys"
	"github.com/aigateway/gateway/workspace"
)

var (
	_ keys.ManagedStore  = (*Store)(nil)
	_ keys.OperatorStore = (*Store)(nil)
	_ keys.ChangeLog     = (*Store)(nil)
)

const keyColumns = `id, user_id, name, role, workspace_id, models, hash, disabled, created_at,
	label, expires_at, updated_at, creator_user_id, limit_usd, limit_reset, include_byok_in_limit`

const keyByIDQuery = `SELECT ` + keyColumns + ` FROM api_keys WHERE id = $1`

// EnsureUser records userID if it is new. It is idempotent and safe to call
// concurrently for the same user.
func (s *Store) EnsureUser(ctx context.Context, userID string) (err error) {
	defer s.classify(&err)
	if userID == "" {
		return invalidf("empty user id")
	}
	_, err = s.w.ExecContext(ctx,
		`INSERT INTO users (id, created_at) VALUES ($1, $2) ON CONFLICT (id) DO NOTHING`,
		userID, s.d.ts(micro(s.now())))
	if err != nil {
		return fmt.Errorf("sqlstore: ensure user: %w", err)
	}
	return nil
}

// CreateKey stores k. k.UserID must have been recorded with EnsureUser
// (ErrUserNotFound otherwise); a non-empty k.WorkspaceID must be a workspace
// of that same user (workspace.ErrNotFound otherwise, which is also what a
// workspace id of an unknown user gets). A reused k.ID is
// ErrConflict. Times are stored to the microsecond.
func (s *Store) CreateKey(ctx context.Context, k keys.APIKey) (err error) {
	defer s.classify(&err)
	_, err = s.CreateKeyOnce(ctx, k, nil)
	return err
}

// CreateKeyOnce is CreateKey with an idempotency record: when idem is not
// nil and an unexpired record of (idem.UserID, idem.Key) exists, nothing is
// created and that record is returned; otherwise the record is written in
// the key's transaction. Concurrent calls with one key create one key.
//
// The creation is recorded in the audit log in the same transaction
// (key.create, with the key's fields; never its secret or hash), shown to
// the actor's user or, for the CLI, to k.UserID. A replay creates nothing
// and records nothing.
func (s *Store) CreateKeyOnce(ctx context.Context, k keys.APIKey, idem *keys.Idempotency) (_ *keys.Idempotency, err error) {
	defer s.classify(&err)
	if k.ID == "" || k.UserID == "" {
		return nil, invalidf("key id and user id are required")
	}
	if !k.Role.Valid() {
		return nil, invalidf("unknown role %q", k.Role)
	}
	if !k.LimitReset.Valid() {
		return nil, invalidf("unknown limit reset %q", k.LimitReset)
	}
	if idem != nil && (idem.UserID != k.UserID || idem.Key == "") {
		return nil, invalidf("idempotency record must name the creating user and a key")
	}
	var ws any
	if k.WorkspaceID != "" {
		id, ok := canonicalUUID(k.WorkspaceID)
		if !ok {
			return nil, workspace.ErrNotFound
		}
		ws = id
	}
	models, err := listArg(k.Models)
	if err != nil {
		return nil, fmt.Errorf("sqlstore: create key: %w", err)
	}
	var creator any
	if k.CreatorUserID != "" {
		creator = k.CreatorUserID
	}
	var prior *keys.Idempotency
	err = s.inTx(ctx, func(tx *sql.Tx) error {
		if idem != nil {
			p, err := s.claimKeyCreation(ctx, tx, *idem)
			if err != nil || p != nil {
				prior = p
				return err
			}
		}
		if ws != nil {
			// A workspace never changes owner, so checking before the insert
			// cannot race; the foreign key covers its existence.
			var n int
			if err := tx.QueryRowContext(ctx,
				`SELECT COUNT(*) FROM workspaces WHERE id = $1 AND created_by = $2`, ws, k.UserID).Scan(&n); err != nil {
				return fmt.Errorf("sqlstore: create key: %w", err)
			}
			if n == 0 {
				return workspace.ErrNotFound
			}
		}
		_, err := tx.ExecContext(ctx, `INSERT INTO api_keys (`+keyColumns+`)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16)`,
			k.ID, k.UserID, k.Name, string(k.Role), ws, models, k.Hash[:], k.Disabled, s.d.ts(micro(k.CreatedAt)),
			k.Label, s.d.nullTS(k.ExpiresAt), s.d.nullTS(k.UpdatedAt), creator, microsArg(k.Limit),
			resetArg(k.LimitReset), k.IncludeBYOKInLimit)
		switch s.d.violation(err) {
		case violationNone:
		case violationPrimaryKey:
			return fmt.Errorf("create key: %w", ErrConflict)
		case violationForeignKey:
			return ErrUserNotFound
		}
		if err != nil {
			return fmt.Errorf("sqlstore: create key: %w", err)
		}
		stored := k
		stored.WorkspaceID, _ = ws.(string)
		return s.recordChange(ctx, tx, k.UserID, audit.KeyCreate, k.ID, created(keyFields(stored)))
	})
	if err != nil {
		return nil, err
	}
	if idem != nil && prior == nil {
		s.expireIdempotency(ctx, idem.UserID)
	}
	return prior, nil
}

// keyCreation is the answer kept for an idempotent key creation.
type keyCreation struct {
	KeyID  string `json:"key_id"`
	Sealed []byte `json:"sealed"`
}

func (s *Store) claimKeyCreation(ctx context.Context, tx *sql.Tx, idem keys.Idempotency) (*keys.Idempotency, error) {
	answer, err := json.Marshal(keyCreation{KeyID: idem.KeyID, Sealed: idem.Sealed})
	if err != nil {
		return nil, fmt.Errorf("sqlstore: encode idempotency record: %w", err)
	}
	prior, err := s.claimRecord(ctx, tx, idemRecord{
		userID: idem.UserID, scope: keys.ScopeCreate, key: idem.Key, requestHash: idem.RequestHash,
		answer: answer, createdAt: idem.CreatedAt,
	}, keys.IdempotencyTTL)
	if err != nil || prior == nil {
		return nil, err
	}
	var kc keyCreation
	if err := json.Unmarshal(prior.answer, &kc); err != nil {
		return nil, fmt.Errorf("sqlstore: decode idempotency record: %w", err)
	}
	return &keys.Idempotency{UserID: idem.UserID, Key: idem.Key, RequestHash: prior.requestHash,
		KeyID: kc.KeyID, Sealed: kc.Sealed, CreatedAt: prior.createdAt}, nil
}

// KeyByID returns the key with the public id, or keys.ErrKeyNotFound. It
// is one prepared primary-key lookup on a read connection.
func (s *Store) KeyByID(ctx context.Context, id string) (_ keys.APIKey, err error) {
	defer s.classify(&err)
	k, err := scanKey(s.keyByID.QueryRowContext(ctx, id))
	if errors.Is(err, sql.ErrNoRows) {
		return keys.APIKey{}, keys.ErrKeyNotFound
	}
	return k, err
}

// UserKey returns userID's key id; another user's key is
// keys.ErrKeyNotFound, as an unknown one.
func (s *Store) UserKey(ctx context.Context, userID, id string) (_ keys.APIKey, err error) {
	defer s.classify(&err)
	k, err := scanKey(s.r.QueryRowContext(ctx, `SELECT `+keyColumns+` FROM api_keys WHERE id = $1 AND user_id = $2`, id, userID))
	if errors.Is(err, sql.ErrNoRows) {
		return keys.APIKey{}, keys.ErrKeyNotFound
	}
	return k, err
}

// ListKeys returns a page of userID's keys, oldest first.
func (s *Store) ListKeys(ctx context.Context, userID string, q keys.ListQuery) (_ []keys.APIKey, err error) {
	defer s.classify(&err)
	where := []string{"user_id = $1"}
	args := []any{userID}
	if !q.IncludeDisabled {
		where = append(where, "disabled = $2")
		args = append(args, false)
	}
	if q.WorkspaceID != "" {
		id, ok := canonicalUUID(q.WorkspaceID)
		if !ok {
			return []keys.APIKey{}, nil
		}
		args = append(args, id)
		where = append(where, fmt.Sprintf("workspace_id = $%d", len(args)))
	}
	args = append(args, q.Limit, q.Offset)
	rows, err := s.r.QueryContext(ctx, `SELECT `+keyColumns+` FROM api_keys WHERE `+strings.Join(where, " AND ")+
		fmt.Sprintf(` ORDER BY created_at, id LIMIT $%d OFFSET $%d`, len(args)-1, len(args)), args...)
	if err != nil {
		return nil, fmt.Errorf("sqlstore: list keys: %w", err)
	}
	defer rows.Close()
	page := []keys.APIKey{}
	for rows.Next() {
		k, err := scanKey(rows)
		if err != nil {
			return nil, err
		}
		page = append(page, k)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlstore: list keys: %w", err)
	}
	return page, nil
}

// UpdateKey applies u to userID's standard key id, sets updated_at, logs
// the change and records it in the audit log (key.update, or key.disable /
// key.enable when disabled switched, with the old and new value of each
// field that changed), in one transaction.
func (s *Store) UpdateKey(ctx context.Context, userID, id string, u keys.UpdateRequest, at time.Time) (_ keys.APIKey, err error) {
	defer s.classify(&err)
	sets := []string{"updated_at = $3"}
	args := []any{id, userID, s.d.ts(micro(at))}
	set := func(col string, v any) {
		args = append(args, v)
		sets = append(sets, fmt.Sprintf("%s = $%d", col, len(args)))
	}
	if u.Name.Set {
		set("name", u.Name.Value)
	}
	if u.Disabled.Set {
		set("disabled", u.Disabled.Value)
	}
	if u.Limit.Set {
		set("limit_usd", microsArg(u.Limit.Value))
	}
	if u.LimitReset.Set {
		set("limit_reset", resetArg(u.LimitReset.Value))
	}
	if u.IncludeBYOKInLimit.Set {
		set("include_byok_in_limit", u.IncludeBYOKInLimit.Value)
	}
	var k keys.APIKey
	err = s.inTx(ctx, func(tx *sql.Tx) error {
		old, err := s.lockStandardKey(ctx, tx, userID, id)
		if err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `UPDATE api_keys SET `+strings.Join(sets, ", ")+
			` WHERE id = $1 AND user_id = $2`, args...); err != nil {
			return fmt.Errorf("sqlstore: update key: %w", err)
		}
		if err := s.logKeyChange(ctx, tx, id); err != nil {
			return err
		}
		k, err = scanKey(tx.QueryRowContext(ctx, `SELECT `+keyColumns+` FROM api_keys WHERE id = $1`, id))
		if err != nil {
			return err
		}
		return s.recordChange(ctx, tx, old.UserID, keyUpdateAction(old, k), id, changed(keyFields(old), keyFields(k)))
	})
	return k, err
}

// keyUpdateAction names an update from old to new: key.disable or
// key.enable when it switched disabled (whatever else it changed, since
// those are the entries looked for), key.update otherwise.
func keyUpdateAction(old, new keys.APIKey) audit.Action {
	switch {
	case !old.Disabled && new.Disabled:
		return audit.KeyDisable
	case old.Disabled && !new.Disabled:
		return audit.KeyEnable
	}
	return audit.KeyUpdate
}

// DeleteKey removes userID's standard key id, logs the change and records
// it in the audit log (key.delete, with the key's fields as they were), in
// one transaction.
func (s *Store) DeleteKey(ctx context.Context, userID, id string, at time.Time) (err error) {
	defer s.classify(&err)
	return s.inTx(ctx, func(tx *sql.Tx) error {
		old, err := s.lockStandardKey(ctx, tx, userID, id)
		if err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `DELETE FROM api_keys WHERE id = $1 AND user_id = $2`, id, userID); err != nil {
			return fmt.Errorf("sqlstore: delete key: %w", err)
		}
		if err := s.logKeyChange(ctx, tx, id); err != nil {
			return err
		}
		return s.recordChange(ctx, tx, old.UserID, audit.KeyDelete, id, removed(keyFields(old)))
	})
}

// lockStandardKey returns userID's key id, read under the row's lock, and
// refuses one of another role.
func (s *Store) lockStandardKey(ctx context.Context, tx *sql.Tx, userID, id string) (keys.APIKey, error) {
	k, err := scanKey(tx.QueryRowContext(ctx, `SELECT `+keyColumns+` FROM api_keys WHERE id = $1 AND user_id = $2`+s.d.forUpdate,
		id, userID))
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return keys.APIKey{}, keys.ErrKeyNotFound
	case err != nil:
		return keys.APIKey{}, fmt.Errorf("sqlstore: find key: %w", err)
	case k.Role != keys.RoleStandard:
		return keys.APIKey{}, keys.ErrManagedByCLI
	}
	return k, nil
}

// lockKey returns any key id, whatever its role, read under the row's
// lock; keys.ErrKeyNotFound for no such key.
func (s *Store) lockKey(ctx context.Context, tx *sql.Tx, id string) (keys.APIKey, error) {
	k, err := scanKey(tx.QueryRowContext(ctx, `SELECT `+keyColumns+` FROM api_keys WHERE id = $1`+s.d.forUpdate, id))
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return keys.APIKey{}, keys.ErrKeyNotFound
	case err != nil:
		return keys.APIKey{}, fmt.Errorf("sqlstore: find key: %w", err)
	}
	return k, nil
}

// SetKeyDisabled disables or enables any key by id, whatever its role (the
// operator's CLI), logs the change and records it in the audit log
// (key.disable or key.enable, shown to the key's user when the actor has
// none). keys.ErrKeyNotFound for no such key.
func (s *Store) SetKeyDisabled(ctx context.Context, id string, disabled bool, at time.Time) (err error) {
	defer s.classify(&err)
	return s.inTx(ctx, func(tx *sql.Tx) error {
		old, err := s.lockKey(ctx, tx, id)
		if err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `UPDATE api_keys SET disabled = $2, updated_at = $3 WHERE id = $1`,
			id, disabled, s.d.ts(micro(at))); err != nil {
			return fmt.Errorf("sqlstore: disable key: %w", err)
		}
		if err := s.logKeyChange(ctx, tx, id); err != nil {
			return err
		}
		action := audit.KeyEnable
		if disabled {
			action = audit.KeyDisable
		}
		var changes []audit.Change
		if c, ok := audit.Diff("disabled", old.Disabled, disabled); ok {
			changes = append(changes, c)
		}
		return s.recordChange(ctx, tx, old.UserID, action, id, changes)
	})
}

// RemoveKey deletes any key by id, whatever its role (the operator's CLI),
// logs the change and records it in the audit log (key.delete, shown to
// the key's user when the actor has none). keys.ErrKeyNotFound for no such
// key.
func (s *Store) RemoveKey(ctx context.Context, id string, at time.Time) (err error) {
	defer s.classify(&err)
	return s.inTx(ctx, func(tx *sql.Tx) error {
		old, err := s.lockKey(ctx, tx, id)
		if err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `DELETE FROM api_keys WHERE id = $1`, id); err != nil {
			return fmt.Errorf("sqlstore: delete key: %w", err)
		}
		if err := s.logKeyChange(ctx, tx, id); err != nil {
			return err
		}
		return s.recordChange(ctx, tx, old.UserID, audit.KeyDelete, id, removed(keyFields(old)))
	})
}

// logKeyChange appends to the change log that replicas poll to forget
// cached authentications (keys.Revoker). It is stamped with the store's
// clock, not the request's: the poll window is measured on that clock.
func (s *Store) logKeyChange(ctx context.Context, tx *sql.Tx, id string) error {
	if _, err := tx.ExecContext(ctx, `INSERT INTO key_changes (key_id, changed_at) VALUES ($1, $2)`,
		id, s.d.ts(micro(s.now()))); err != nil {
		return fmt.Errorf("sqlstore: log key change: %w", err)
	}
	return nil
}

// KeyChangesSince returns the change log's entries stamped at or after
// since, in sequence order.
func (s *Store) KeyChangesSince(ctx context.Context, since time.Time) (_ []keys.Change, err error) {
	defer s.classify(&err)
	rows, err := s.r.QueryContext(ctx, `SELECT seq, key_id, changed_at FROM key_changes
		WHERE changed_at >= $1 ORDER BY seq`, s.d.ts(micro(since)))
	if err != nil {
		return nil, fmt.Errorf("sqlstore: read key changes: %w", err)
	}
	defer rows.Close()
	var out []keys.Change
	for rows.Next() {
		var c keys.Change
		if err := rows.Scan(&c.Seq, &c.KeyID, timeCol{&c.At}); err != nil {
			return nil, fmt.Errorf("sqlstore: read key changes: %w", err)
		}
		out = append(out, c)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlstore: read key changes: %w", err)
	}
	return out, nil
}

func scanKey(row scanner) (keys.APIKey, error) {
	var (
		k       keys.APIKey
		role    string
		ws      sql.NullString
		hash    []byte
		creator sql.NullString
		reset   sql.NullString
	)
	err := row.Scan(&k.ID, &k.UserID, &k.Name, &role, &ws, listCol{&k.Models}, &hash, &k.Disabled,
		timeCol{&k.CreatedAt}, &k.Label, nullTimeCol{&k.ExpiresAt}, nullTimeCol{&k.UpdatedAt}, &creator,
		microsCol{&k.Limit}, &reset, &k.IncludeBYOKInLimit)
	if err != nil {
		if errors.Is(err, sql.ErrNoRows) {
			return keys.APIKey{}, err
		}
		return keys.APIKey{}, fmt.Errorf("sqlstore: read key: %w", err)
	}
	if len(hash) != sha256.Size {
		return keys.APIKey{}, fmt.Errorf("sqlstore: key %s: stored hash has %d bytes", k.ID, len(hash))
	}
	k.Role = keys.Role(role)
	k.WorkspaceID = ws.String
	k.CreatorUserID = creator.String
	k.LimitReset = keys.Reset(reset.String)
	copy(k.Hash[:], hash)
	return k, nil
}

func microsArg(m *money.Micros) any {
	if m == nil {
		return nil
	}
	return m.String()
}

func resetArg(r keys.Reset) any {
	if r == keys.ResetNever {
		return nil
	}
	return string(r)
}

// microsCol scans an amount stored by microsArg: a decimal (PostgreSQL
// NUMERIC, as text) or its text (SQLite); NULL is nil.
type microsCol struct{ m **money.Micros }

func (c microsCol) Scan(src any) error {
	var text string
	switch v := src.(type) {
	case nil:
		*c.m = nil
		return nil
	case string:
		text = v
	case []byte:
		text = string(v)
	default:
		return fmt.Errorf("sqlstore: cannot scan %T into an amount", src)
	}
	m, err := money.Parse(text)
	if err != nil {
		return fmt.Errorf("sqlstore: stored amount %q: %w", text, err)
	}
	*c.m = &m
	return nil
}

var _ sql.Scanner = microsCol{}
