package sqlstore

import (
	"context"
	"database/sql"
	"embed"
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strconv"
	"strings"

	"go.uber.org/zap"
)

// Migrations live in migrations/<driver>/NNNN_name.sql. Each file is applied
// once, in version order, and recorded in schema_migrations. Applied files
// must never be edited: add a new version instead.
//
//go:embed migrations
var migrationFiles embed.FS

type migration struct {
	version int
	name    string
	sql     string
}

// loadMigrations returns the driver's migrations in version order. Versions
// must be unique and start at 1 without gaps, so a misnamed file fails the
// tests instead of being skipped.
func loadMigrations(driver string) ([]migration, error) {
	dir := path.Join("migrations", driver)
	entries, err := fs.ReadDir(migrationFiles, dir)
	if err != nil {
		return nil, err
	}
	var ms []migration
	for _, e := range entries {
		if e.IsDir() || !strings.HasSuffix(e.Name(), ".sql") {
			continue
		}
		num, _, ok := strings.Cut(e.Name(), "_")
		v, err := strconv.Atoi(num)
		if !ok || err != nil || v <= 0 {
			return nil, fmt.Errorf("migration %s: name must be NNNN_name.sql", e.Name())
		}
		b, err := fs.ReadFile(migrationFiles, path.Join(dir, e.Name()))
		if err != nil {
			return nil, err
		}
		ms = append(ms, migration{version: v, name: strings.TrimSuffix(e.Name(), ".sql"), sql: string(b)})
	}
	sort.Slice(ms, func(i, j int) bool { return ms[i].version < ms[j].version })
	for i, m := range ms {
		if m.version != i+1 {
			return nil, fmt.Errorf("migration %s: expected version %d", m.name, i+1)
		}
	}
	return ms, nil
}

// migrate applies pending migrations in one transaction. Concurrent callers
// (replicas starting together) take turns: PostgreSQL holds an advisory lock
// for the transaction, SQLite's BEGIN IMMEDIATE holds the write lock. The
// second one finds everything applied and changes nothing.
func (s *Store) migrate(ctx context.Context) error {
	ms, err := loadMigrations(s.d.name)
	if err != nil {
		return err
	}
	return s.inTx(ctx, func(tx *sql.Tx) error {
		if s.d.migrationLock != "" {
			if _, err := tx.ExecContext(ctx, s.d.migrationLock); err != nil {
				return fmt.Errorf("lock: %w", err)
			}
		}
		if _, err := tx.ExecContext(ctx, s.d.migrationsTable); err != nil {
			return fmt.Errorf("create schema_migrations: %w", err)
		}
		applied, err := appliedVersions(ctx, tx)
		if err != nil {
			return err
		}
		newest := 0
		for v := range applied {
			newest = max(newest, v)
		}
		for _, m := range ms {
			if name, ok := applied[m.version]; ok && !(placeholders[name] && name != m.name) {
				continue
			}
			if _, ok := applied[m.version]; ok {
				// A placeholder held this version in the database; the
				// real migration replaces it, and takes over its record.
				if _, err := tx.ExecContext(ctx, `DELETE FROM schema_migrations WHERE version = $1`, m.version); err != nil {
					return fmt.Errorf("replace %s: %w", applied[m.version], err)
				}
			}
			if _, err := tx.ExecContext(ctx, m.sql); err != nil {
				return fmt.Errorf("%s: %w", m.name, err)
			}
			if _, err := tx.ExecContext(ctx,
				`INSERT INTO schema_migrations (version, name, applied_at) VALUES ($1, $2, $3)`,
				m.version, m.name, s.d.ts(micro(s.now()))); err != nil {
				return fmt.Errorf("record %s: %w", m.name, err)
			}
			s.log.Info("schema migration applied", zap.String("driver", s.d.name), zap.String("migration", m.name))
		}
		if known := len(ms); newest > known {
			// A newer release migrated this database (a rolling deploy or a
			// rollback). Migrations only add, so keep serving.
			s.log.Warn("database schema is newer than this binary",
				zap.Int("database_version", newest), zap.Int("binary_version", known))
		}
		return nil
	})
}

// placeholders are migrations that held a version number, doing nothing,
// until the real migration of that number was merged. A database that
// recorded one gets the real migration on its next Open.
var placeholders = map[string]bool{"0004_reserved_for_file_listing": true}

func appliedVersions(ctx context.Context, tx *sql.Tx) (map[int]string, error) {
	rows, err := tx.QueryContext(ctx, `SELECT version, name FROM schema_migrations`)
	if err != nil {
		return nil, fmt.Errorf("read schema_migrations: %w", err)
	}
	defer rows.Close()
	applied := make(map[int]string)
	for rows.Next() {
		var v int
		var name string
		if err := rows.Scan(&v, &name); err != nil {
			return nil, err
		}
		applied[v] = name
	}
	return applied, rows.Err()
}
