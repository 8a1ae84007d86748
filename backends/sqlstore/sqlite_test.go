package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"
)

func TestSQLitePragmas(t *testing.T) {
	t.Parallel()
	s := sqliteBackend().store(t)
	tests := []struct {
		name   string
		db     string
		pragma string
		want   string
	}{
		{"writer journal", "w", "journal_mode", "wal"},
		{"reader journal", "r", "journal_mode", "wal"},
		{"writer foreign keys", "w", "foreign_keys", "1"},
		{"reader foreign keys", "r", "foreign_keys", "1"},
		{"writer synchronous FULL", "w", "synchronous", "2"},
		{"writer busy timeout", "w", "busy_timeout", "10000"},
		{"reader busy timeout", "r", "busy_timeout", "10000"},
		{"writer writable", "w", "query_only", "0"},
		{"reader read-only", "r", "query_only", "1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			db := s.w
			if tt.db == "r" {
				db = s.r
			}
			var got string
			rawQuery(t, db, &got, "PRAGMA "+tt.pragma)
			if got != tt.want {
				t.Errorf("PRAGMA %s = %q, want %q", tt.pragma, got, tt.want)
			}
		})
	}
	if s.w.Stats().MaxOpenConnections != 1 {
		t.Errorf("writer allows %d connections, want 1", s.w.Stats().MaxOpenConnections)
	}
	if _, err := s.r.ExecContext(testContext(t), `INSERT INTO users (id, created_at) VALUES ('x', 0)`); err == nil {
		t.Error("a write through the read pool succeeded")
	}
}

func TestSQLiteFileIsPrivate(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "a", "b", "gateway.db")
	b := sqliteBackend()
	b.open(t, path)
	for _, p := range []string{path, filepath.Dir(path)} {
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if perm := fi.Mode().Perm(); perm&0o077 != 0 {
			t.Errorf("%s has mode %v, want no group or other access", p, perm)
		}
	}
}

func TestOpenRejects(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	tests := []struct {
		name, driver, dsn string
		want              error
	}{
		{"unknown driver", "mysql", "x", ErrUnknownDriver},
		{"empty driver", "", "x", ErrUnknownDriver},
		{"sqlite memory", DriverSQLite, ":memory:", ErrInvalidArgument},
		{"sqlite empty path", DriverSQLite, "", ErrInvalidArgument},
		{"sqlite uri", DriverSQLite, "file:" + filepath.Join(dir, "x.db"), ErrInvalidArgument},
		{"sqlite parameters", DriverSQLite, filepath.Join(dir, "x.db") + "?_pragma=foreign_keys(0)", ErrInvalidArgument},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := Open(testContext(t), tt.driver, tt.dsn, zaptest.NewLogger(t))
			if err == nil {
				_ = s.Close()
			}
			if !errors.Is(err, tt.want) {
				t.Errorf("Open = %v, want %v", err, tt.want)
			}
		})
	}
	t.Run("postgres password stays out of errors", func(t *testing.T) {
		// Port 1 on loopback refuses at once.
		_, err := Open(testContext(t), DriverPostgres, "postgres://app:s3cr3t-pw@127.0.0.1:1/db?connect_timeout=2", nil)
		if err == nil {
			t.Fatal("Open of an unreachable server succeeded")
		}
		if msg := err.Error(); strings.Contains(msg, "s3cr3t-pw") {
			t.Errorf("error reveals the password: %s", msg)
		}
	})
}

// TestMigrationsMatch keeps the two dialects' migrations in step: the same
// versions with the same names.
func TestMigrationsMatch(t *testing.T) {
	t.Parallel()
	lite, err := loadMigrations(DriverSQLite)
	if err != nil {
		t.Fatal(err)
	}
	pg, err := loadMigrations(DriverPostgres)
	if err != nil {
		t.Fatal(err)
	}
	if len(lite) != len(pg) {
		t.Fatalf("%d sqlite migrations, %d postgres", len(lite), len(pg))
	}
	for i := range lite {
		if lite[i].name != pg[i].name {
			t.Errorf("version %d: sqlite %s, postgres %s", i+1, lite[i].name, pg[i].name)
		}
	}
}

// TestSQLiteOpenWaitsForTheFileLock: a replica opening a new database file
// while another process holds its lock (here, a transaction of its own)
// waits for it rather than failing with SQLITE_BUSY, which switching the
// file to WAL gets at once instead of from the busy timeout.
func TestSQLiteOpenWaitsForTheFileLock(t *testing.T) {
	t.Parallel() // a database file of its own; its wait overlaps the others' work
	path := filepath.Join(t.TempDir(), "gateway.db")
	other, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	other.SetMaxOpenConns(1)
	ctx := context.Background()
	if _, err := other.ExecContext(ctx, `CREATE TABLE held (x INTEGER)`); err != nil {
		t.Fatal(err)
	}
	tx, err := other.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO held VALUES (1)`); err != nil {
		t.Fatal(err)
	}
	released := make(chan struct{})
	go func() {
		defer close(released)
		time.Sleep(300 * time.Millisecond) // the other process holds the lock a while
		_ = tx.Commit()
	}()
	s, err := Open(ctx, DriverSQLite, path, zaptest.NewLogger(t))
	<-released
	if err != nil {
		t.Fatalf("Open while another connection held the file: %v", err)
	}
	_ = s.Close()
}
