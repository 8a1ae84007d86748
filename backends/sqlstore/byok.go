package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/aigateway/gateway/files"
	"github.com/aigateway/gateway/internal/audit"
	"github.com/aigateway/gateway/policy/keys"
	"github.com/aigateway/gateway/workspace"
)

var _ keys.ProviderKeyStore = (*Store)(nil)

const byokColumns = `id, user_id, workspace_id, provider, name, label, sealed, source, disabled,
	allowed_api_key_hashes, allowed_models, is_byok_only, is_fallback, is_required, declared_zdr,
	sort_order, created_at, updated_at`

// CreateProviderKey stores k. Its workspace must be one of k.UserID's
// (workspace.ErrNotFound otherwise). The creation is recorded in the audit
// log in the same transaction (provider_key.create, with the key's fields
// and that a secret was set, never the secret).
func (s *Store) CreateProviderKey(ctx context.Context, k keys.ProviderKey) (err error) {
	defer s.classify(&err)
	id, ok := canonicalUUID(k.ID)
	if !ok || !keys.IsProvider(k.Provider) || len(k.Sealed) == 0 {
		return invalidf("provider key needs a UUID, a known provider and a sealed secret")
	}
	ws, ok := canonicalUUID(k.WorkspaceID)
	if !ok {
		return workspace.ErrNotFound
	}
	return s.inTx(ctx, func(tx *sql.Tx) error {
		if err := s.ownWorkspace(ctx, tx, k.UserID, ws); err != nil {
			return err
		}
		return s.insertProviderKey(ctx, tx, id, ws, k)
	})
}

// recordProviderKeyCreate records the creation of k in tx.
func (s *Store) recordProviderKeyCreate(ctx context.Context, tx *sql.Tx, k keys.ProviderKey) error {
	return s.recordChange(ctx, tx, k.UserID, audit.ProviderKeyCreate, k.ID,
		append(created(providerKeyFields(k)), audit.Secret("key")))
}

func (s *Store) insertProviderKey(ctx context.Context, tx *sql.Tx, id, ws string, k keys.ProviderKey) error {
	allowedKeys, err := listArg(k.AllowedAPIKeys)
	if err != nil {
		return err
	}
	allowedModels, err := listArg(k.AllowedModels)
	if err != nil {
		return err
	}
	source := "api"
	if k.FromCLI {
		source = "cli"
	}
	_, err = tx.ExecContext(ctx, `INSERT INTO byok_keys (`+byokColumns+`)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18)`,
		id, k.UserID, ws, k.Provider, k.Name, k.Label, k.Sealed, source, k.Disabled, allowedKeys, allowedModels,
		k.IsBYOKOnly, k.IsFallback, k.IsRequired, k.DeclaredZDR, k.SortOrder, s.d.ts(micro(k.CreatedAt)),
		s.d.nullTS(k.UpdatedAt))
	switch s.d.violation(err) {
	case violationNone:
	case violationPrimaryKey:
		return fmt.Errorf("create provider key: %w", ErrConflict)
	case violationForeignKey:
		return workspace.ErrNotFound
	}
	if err != nil {
		return fmt.Errorf("sqlstore: create provider key: %w", err)
	}
	k.ID, k.WorkspaceID = id, ws
	return s.recordProviderKeyCreate(ctx, tx, k)
}

// ownWorkspace checks that ws is a workspace of userID. A workspace never
// changes owner, so the check cannot race the write after it.
func (s *Store) ownWorkspace(ctx context.Context, tx *sql.Tx, userID, ws string) error {
	var n int
	if err := tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM workspaces WHERE id = $1 AND created_by = $2`,
		ws, userID).Scan(&n); err != nil {
		return fmt.Errorf("sqlstore: find workspace: %w", err)
	}
	if n == 0 {
		return workspace.ErrNotFound
	}
	return nil
}

// UserProviderKey returns userID's provider key id.
func (s *Store) UserProviderKey(ctx context.Context, userID, id string) (_ keys.ProviderKey, err error) {
	defer s.classify(&err)
	id, ok := canonicalUUID(id)
	if !ok {
		return keys.ProviderKey{}, keys.ErrProviderKeyNotFound
	}
	k, err := scanProviderKey(s.r.QueryRowContext(ctx, `SELECT `+byokColumns+` FROM byok_keys
		WHERE id = $1 AND user_id = $2`, id, userID))
	if errors.Is(err, sql.ErrNoRows) {
		return keys.ProviderKey{}, keys.ErrProviderKeyNotFound
	}
	return k, err
}

// ListProviderKeys returns a page of userID's provider keys (oldest first)
// and how many there are.
func (s *Store) ListProviderKeys(ctx context.Context, userID string, q keys.ProviderKeyQuery) (_ []keys.ProviderKey, _ int, err error) {
	defer s.classify(&err)
	where, args := "user_id = $1", []any{userID}
	if q.WorkspaceID != "" {
		ws, ok := canonicalUUID(q.WorkspaceID)
		if !ok {
			return []keys.ProviderKey{}, 0, nil
		}
		where, args = where+" AND workspace_id = $2", append(args, ws)
	}
	var total int
	if err := s.r.QueryRowContext(ctx, `SELECT COUNT(*) FROM byok_keys WHERE `+where, args...).Scan(&total); err != nil {
		return nil, 0, fmt.Errorf("sqlstore: count provider keys: %w", err)
	}
	args = append(args, q.Limit, q.Offset)
	rows, err := s.r.QueryContext(ctx, `SELECT `+byokColumns+` FROM byok_keys WHERE `+where+
		fmt.Sprintf(` ORDER BY created_at, id LIMIT $%d OFFSET $%d`, len(args)-1, len(args)), args...)
	if err != nil {
		return nil, 0, fmt.Errorf("sqlstore: list provider keys: %w", err)
	}
	defer rows.Close()
	page := []keys.ProviderKey{}
	for rows.Next() {
		k, err := scanProviderKey(rows)
		if err != nil {
			return nil, 0, err
		}
		page = append(page, k)
	}
	if err := rows.Err(); err != nil {
		return nil, 0, fmt.Errorf("sqlstore: list provider keys: %w", err)
	}
	return page, total, nil
}

// UpdateProviderKey writes the Set fields of f (the secret from secret)
// and updated_at to userID's provider key id, and records the update in
// the audit log in the same transaction (provider_key.update, with the old
// and new value of each field that changed; a new secret only as changed).
func (s *Store) UpdateProviderKey(ctx context.Context, userID, id string, f keys.ProviderKeyFields, secret *keys.SealedSecret, at time.Time) (_ keys.ProviderKey, err error) {
	defer s.classify(&err)
	id, ok := canonicalUUID(id)
	if !ok {
		return keys.ProviderKey{}, keys.ErrProviderKeyNotFound
	}
	sets := []string{"updated_at = $3"}
	args := []any{id, userID, s.d.ts(micro(at))}
	set := func(col string, v any) {
		args = append(args, v)
		sets = append(sets, fmt.Sprintf("%s = $%d", col, len(args)))
	}
	if secret != nil {
		set("sealed", secret.Sealed)
		set("label", secret.Label)
	}
	if f.Name.Set {
		set("name", f.Name.Value)
	}
	if f.Disabled.Set {
		set("disabled", f.Disabled.Value)
	}
	for _, l := range []struct {
		col string
		v   keysList
	}{{"allowed_api_key_hashes", keysList(f.AllowedAPIKeys)}, {"allowed_models", keysList(f.AllowedModels)}} {
		if l.v.Set {
			v, err := listArg(l.v.Value)
			if err != nil {
				return keys.ProviderKey{}, err
			}
			set(l.col, v)
		}
	}
	for _, b := range []struct {
		col string
		v   keys.Optional[bool]
	}{{"is_byok_only", f.IsBYOKOnly}, {"is_fallback", f.IsFallback}, {"is_required", f.IsRequired}} {
		if b.v.Set {
			set(b.col, b.v.Value)
		}
	}
	if f.DeclaredZDR.Set {
		set("declared_zdr", f.DeclaredZDR.Value)
	}
	if f.SortOrder.Set {
		set("sort_order", f.SortOrder.Value)
	}
	var k keys.ProviderKey
	err = s.inTx(ctx, func(tx *sql.Tx) error {
		old, err := s.lockProviderKey(ctx, tx, userID, id)
		if err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `UPDATE byok_keys SET `+strings.Join(sets, ", ")+
			` WHERE id = $1 AND user_id = $2`, args...); err != nil {
			return fmt.Errorf("sqlstore: update provider key: %w", err)
		}
		k, err = scanProviderKey(tx.QueryRowContext(ctx, `SELECT `+byokColumns+` FROM byok_keys WHERE id = $1`, id))
		if err != nil {
			return err
		}
		changes := changed(providerKeyFields(old), providerKeyFields(k))
		if secret != nil {
			changes = append(changes, audit.Secret("key"))
		}
		return s.recordChange(ctx, tx, old.UserID, audit.ProviderKeyUpdate, id, changes)
	})
	return k, err
}

// lockProviderKey returns userID's provider key id, read under the row's
// lock, or keys.ErrProviderKeyNotFound.
func (s *Store) lockProviderKey(ctx context.Context, tx *sql.Tx, userID, id string) (keys.ProviderKey, error) {
	k, err := scanProviderKey(tx.QueryRowContext(ctx, `SELECT `+byokColumns+` FROM byok_keys
		WHERE id = $1 AND user_id = $2`+s.d.forUpdate, id, userID))
	if errors.Is(err, sql.ErrNoRows) {
		return keys.ProviderKey{}, keys.ErrProviderKeyNotFound
	}
	return k, err
}

type keysList = keys.Optional[[]string]

// DeleteProviderKey removes userID's provider key id and records it in
// the audit log in the same transaction (provider_key.delete, with the
// key's fields as they were).
func (s *Store) DeleteProviderKey(ctx context.Context, userID, id string) (err error) {
	defer s.classify(&err)
	id, ok := canonicalUUID(id)
	if !ok {
		return keys.ErrProviderKeyNotFound
	}
	return s.inTx(ctx, func(tx *sql.Tx) error {
		old, err := s.lockProviderKey(ctx, tx, userID, id)
		if err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `DELETE FROM byok_keys WHERE id = $1`, id); err != nil {
			return fmt.Errorf("sqlstore: delete provider key: %w", err)
		}
		return s.recordChange(ctx, tx, old.UserID, audit.ProviderKeyDelete, id, removed(providerKeyFields(old)))
	})
}

// PutProviderKey stores the key `gateway byok set` gives for workspaceID
// and provider: it replaces the one that command stored before, or is added
// after the workspace's other keys of the provider. An unknown workspace is
// workspace.ErrNotFound. Either is recorded in the audit log in the same
// transaction (provider_key.update or .create, the secret only as changed),
// shown to the workspace's owner when the actor has no user.
func (s *Store) PutProviderKey(ctx context.Context, workspaceID, provider string, sealed []byte, label string) (err error) {
	defer s.classify(&err)
	ws, ok := canonicalUUID(workspaceID)
	if !ok {
		return workspace.ErrNotFound
	}
	if !keys.IsProvider(provider) || len(sealed) == 0 {
		return invalidf("a known provider and a sealed key are required")
	}
	now := micro(s.now())
	return s.inTx(ctx, func(tx *sql.Tx) error {
		replaced, err := s.replaceCLIProviderKeys(ctx, tx, ws, provider, sealed, label, now)
		if err != nil || len(replaced) > 0 {
			return err
		}
		var owner string
		err = tx.QueryRowContext(ctx, `SELECT created_by FROM workspaces WHERE id = $1`, ws).Scan(&owner)
		if errors.Is(err, sql.ErrNoRows) {
			return workspace.ErrNotFound
		}
		if err != nil {
			return fmt.Errorf("sqlstore: put provider key: %w", err)
		}
		name := "set with the CLI"
		return s.insertProviderKey(ctx, tx, uuid.NewString(), ws, keys.ProviderKey{
			UserID: owner, Provider: provider, Name: &name, Label: label, Sealed: sealed, FromCLI: true,
			CreatedAt: now,
		})
	})
}

// replaceCLIProviderKeys writes the secret to the keys of provider the CLI
// stored for workspace ws, records each replacement, and returns their ids.
func (s *Store) replaceCLIProviderKeys(ctx context.Context, tx *sql.Tx, ws, provider string, sealed []byte, label string, now time.Time) ([]string, error) {
	rows, err := tx.QueryContext(ctx, `UPDATE byok_keys SET sealed = $3, label = $4, updated_at = $5
		WHERE workspace_id = $1 AND provider = $2 AND source = 'cli' RETURNING id, user_id`,
		ws, provider, sealed, label, s.d.ts(now))
	if err != nil {
		return nil, fmt.Errorf("sqlstore: put provider key: %w", err)
	}
	var ids, owners []string
	for rows.Next() {
		var id, owner string
		if err := rows.Scan(&id, &owner); err != nil {
			rows.Close()
			return nil, fmt.Errorf("sqlstore: put provider key: %w", err)
		}
		if u, err := uuid.Parse(id); err == nil {
			id = u.String()
		}
		ids, owners = append(ids, id), append(owners, owner)
	}
	err = rows.Err()
	rows.Close()
	if err != nil {
		return nil, fmt.Errorf("sqlstore: put provider key: %w", err)
	}
	for i, id := range ids {
		if err := s.recordChange(ctx, tx, owners[i], audit.ProviderKeyUpdate, id,
			[]audit.Change{audit.Secret("key")}); err != nil {
			return nil, err
		}
	}
	return ids, nil
}

// ProviderKey returns the sealed secret of the key workspaceID's calling
// key apiKeyID uses for provider: the enabled one it is allowed to use with
// the lowest sort_order (then the oldest), or files.ErrNoProviderKey.
func (s *Store) ProviderKey(ctx context.Context, workspaceID, provider, apiKeyID string) (_ []byte, err error) {
	defer s.classify(&err)
	ws, ok := canonicalUUID(workspaceID)
	if !ok {
		return nil, files.ErrNoProviderKey
	}
	rows, err := s.r.QueryContext(ctx, `SELECT sealed, allowed_api_key_hashes FROM byok_keys
		WHERE workspace_id = $1 AND provider = $2 AND disabled = $3
		ORDER BY sort_order, created_at, id`, ws, provider, false)
	if err != nil {
		return nil, fmt.Errorf("sqlstore: provider key: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var k keys.ProviderKey
		if err := rows.Scan(&k.Sealed, listCol{&k.AllowedAPIKeys}); err != nil {
			return nil, fmt.Errorf("sqlstore: provider key: %w", err)
		}
		if k.Allows(apiKeyID) {
			return k.Sealed, nil
		}
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlstore: provider key: %w", err)
	}
	return nil, files.ErrNoProviderKey
}

func scanProviderKey(row scanner) (keys.ProviderKey, error) {
	var (
		k      keys.ProviderKey
		name   sql.NullString
		zdr    sql.NullBool
		source string
	)
	err := row.Scan(&k.ID, &k.UserID, &k.WorkspaceID, &k.Provider, &name, &k.Label, &k.Sealed, &source,
		&k.Disabled, listCol{&k.AllowedAPIKeys}, listCol{&k.AllowedModels}, &k.IsBYOKOnly, &k.IsFallback,
		&k.IsRequired, &zdr, &k.SortOrder, timeCol{&k.CreatedAt}, nullTimeCol{&k.UpdatedAt})
	if err != nil {
		if errors.Is(err, sql.ErrNoRows) {
			return keys.ProviderKey{}, err
		}
		return keys.ProviderKey{}, fmt.Errorf("sqlstore: read provider key: %w", err)
	}
	if name.Valid {
		k.Name = &name.String
	}
	if zdr.Valid {
		k.DeclaredZDR = &zdr.Bool
	}
	k.FromCLI = source == "cli"
	if u, err := uuid.Parse(k.WorkspaceID); err == nil {
		k.WorkspaceID = u.String()
	}
	return k, nil
}
