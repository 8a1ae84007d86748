// Package sqlstore is the gateway's SQL metadata store: users and API keys,
// workspaces with their idempotency records, file records with storage-quota
// reservations, and sealed BYOK provider keys. One implementation serves two
// databases through a small dialect layer:
//
//   - SQLite (modernc.org/sqlite, no cgo), the embedded default. SQLite allows
//     one writer at a time, so the Store keeps exactly one write connection
//     (every write transaction starts with BEGIN IMMEDIATE and queues in Go for
//     that connection instead of failing with SQLITE_BUSY) and a separate pool
//     of read-only connections, which WAL lets run beside the writer.
//   - PostgreSQL (pgx/v5 through database/sql), for several replicas. Races
//     between replicas are decided by the database: unique constraints for
//     slugs, ON CONFLICT for idempotency keys, a row lock per workspace for
//     quota reservations, and a transaction-scoped advisory lock around
//     migrations.
//
// Times are kept to the microsecond (sub-microsecond digits are truncated, the
// same on both databases) and returned in UTC. Callers that echo a time they
// stored, such as the workspace service answering a create, should truncate
// it themselves first (t.Truncate(time.Microsecond)) so the answer and later
// reads agree.
package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/aigateway/gateway/internal/outage"
	"github.com/aigateway/gateway/policy/keys"
	"github.com/google/uuid"
	"go.uber.org/zap"

	"github.com/aigateway/gateway/files"
	"github.com/aigateway/gateway/workspace"
)

// Driver names accepted by Open (the metadata.driver config value).
const (
	DriverSQLite   = "sqlite"
	DriverPostgres = "postgres"
)

var (
	_ keys.KeyStore      = (*Store)(nil)
	_ workspace.Store    = (*Store)(nil)
	_ files.Store        = (*Store)(nil)
	_ files.ProviderKeys = (*Store)(nil)
)

// Store implements keys.KeyStore, workspace.Store, files.Store and
// files.ProviderKeys on SQLite or PostgreSQL. It is safe for concurrent use,
// also by several processes (replicas on one PostgreSQL database, or a server
// and a CLI command on one SQLite file).
type Store struct {
	d   dialect
	w   *sql.DB // writes; on SQLite its only connection
	r   *sql.DB // reads; the same pool as w on PostgreSQL
	log *zap.Logger
	now func() time.Time
	// down is set while the database is unavailable (see classify).
	down atomic.Bool

	keyByID *sql.Stmt // the authentication cache-miss path, prepared once
}

// Open connects to the metadata database, applies pending schema migrations
// and returns the Store. driver is DriverSQLite, with dsn a file path (its
// directory is created), or DriverPostgres, with dsn a postgres:// URL.
//
// Migrations are idempotent and safe to run from several processes at once,
// so every replica may call Open at start. Open fails when the database is
// unreachable or a migration fails; the error never contains the DSN's
// password.
func Open(ctx context.Context, driver, dsn string, log *zap.Logger) (*Store, error) {
	if log == nil {
		log = zap.NewNop()
	}
	var (
		s   *Store
		err error
	)
	switch driver {
	case DriverSQLite:
		s, err = openSQLite(ctx, dsn, log)
	case DriverPostgres:
		s, err = openPostgres(ctx, dsn, log)
	default:
		return nil, fmt.Errorf("%w %q (want %q or %q)", ErrUnknownDriver, driver, DriverSQLite, DriverPostgres)
	}
	if err != nil {
		return nil, err
	}
	if err := s.migrate(ctx); err != nil {
		_ = s.Close()
		return nil, fmt.Errorf("sqlstore: migrate %s: %w", driver, err)
	}
	s.keyByID, err = s.r.PrepareContext(ctx, keyByIDQuery)
	if err != nil {
		_ = s.Close()
		return nil, fmt.Errorf("sqlstore: prepare key lookup: %w", err)
	}
	return s, nil
}

// Ping reports whether the database answers, for readiness checks. On
// SQLite it uses a read connection, so a long write never delays it.
func (s *Store) Ping(ctx context.Context) error {
	if err := s.r.PingContext(ctx); err != nil {
		return fmt.Errorf("sqlstore: ping: %w", err)
	}
	return nil
}

// Close releases every connection. The Store must not be used afterwards.
func (s *Store) Close() error {
	var errs []error
	if s.keyByID != nil {
		errs = append(errs, s.keyByID.Close())
	}
	if s.r != s.w {
		errs = append(errs, s.r.Close())
	}
	errs = append(errs, s.w.Close())
	return errors.Join(errs...)
}

// inTx runs fn in a write transaction and commits it when fn returns nil.
// On SQLite the transaction is BEGIN IMMEDIATE on the one write connection,
// so fn never meets another writer halfway.
func (s *Store) inTx(ctx context.Context, fn func(tx *sql.Tx) error) error {
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("sqlstore: begin: %w", err)
	}
	if err := fn(tx); err != nil {
		_ = tx.Rollback()
		return err
	}
	if err := tx.Commit(); err != nil {
		if unreachable(err) || s.d.unavailable(err) {
			// The COMMIT may have reached the server before the
			// connection failed: the transaction may be durable.
			return fmt.Errorf("sqlstore: commit: %w: %w", outage.ErrOutcomeUnknown, err)
		}
		return fmt.Errorf("sqlstore: commit: %w", err)
	}
	return nil
}

// micro is t as stored: truncated to the microsecond, in UTC.
func micro(t time.Time) time.Time { return t.Truncate(time.Microsecond).UTC() }

// canonicalUUID returns id in lowercase canonical form when it is a UUID
// written as 36 characters, and false otherwise. Ids that are not UUIDs can
// name no workspace; checking here keeps PostgreSQL's uuid columns from
// turning them into errors and keeps both databases answering alike.
func canonicalUUID(id string) (string, bool) {
	if len(id) != 36 {
		return "", false
	}
	u, err := uuid.Parse(id)
	if err != nil {
		return "", false
	}
	return u.String(), true
}
