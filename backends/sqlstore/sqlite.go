package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"

	"go.uber.org/zap"
	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"
)

// sqliteBusyTimeout bounds how long a connection waits for another process
// holding the file's write lock (a CLI command beside the server) before
// SQLITE_BUSY. Writers of this process never wait here: they queue for the
// one write connection in database/sql.
const sqliteBusyTimeout = 10 * time.Second

var sqliteDialect = dialect{
	name: DriverSQLite,
	migrationsTable: `CREATE TABLE IF NOT EXISTS schema_migrations (
		version    INTEGER NOT NULL PRIMARY KEY,
		name       TEXT    NOT NULL,
		applied_at INTEGER NOT NULL
	) STRICT`,
	ts:          func(t time.Time) any { return t.UnixMicro() },
	appendTS:    func(b []byte, t time.Time) []byte { return strconv.AppendInt(b, t.UnixMicro(), 10) },
	violation:   sqliteViolation,
	unavailable: sqliteUnavailable,
}

// sqliteViolation reads SQLite's extended result codes (modernc enables
// them on every connection).
func sqliteViolation(err error) violation {
	var se *sqlite.Error
	if !errors.As(err, &se) {
		return violationNone
	}
	switch se.Code() {
	case sqlite3.SQLITE_CONSTRAINT_PRIMARYKEY:
		return violationPrimaryKey
	case sqlite3.SQLITE_CONSTRAINT_UNIQUE:
		return violationUnique
	case sqlite3.SQLITE_CONSTRAINT_FOREIGNKEY:
		return violationForeignKey
	case sqlite3.SQLITE_CONSTRAINT_DATATYPE: // an integer overflowed into a REAL, which STRICT refuses
		return violationOutOfRange
	}
	return violationNone
}

// sqliteUnavailable recognises a database file that cannot serve right
// now: locked by another process past the busy timeout, its disk full, an
// I/O error, or the file not openable or read-only.
func sqliteUnavailable(err error) bool {
	var se *sqlite.Error
	if !errors.As(err, &se) {
		return false
	}
	switch se.Code() & 0xff { // the primary code of an extended one
	case sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED, sqlite3.SQLITE_FULL, sqlite3.SQLITE_IOERR,
		sqlite3.SQLITE_CANTOPEN, sqlite3.SQLITE_READONLY, sqlite3.SQLITE_NOMEM:
		return true
	}
	return false
}

// connectWhileBusy connects db, trying again for up to sqliteBusyTimeout
// while the file is locked. Switching a new file to WAL needs its exclusive
// lock, and when another process takes the file first (replicas starting
// together on an empty database) SQLite answers SQLITE_BUSY at once, its
// busy timeout unused: waiting could deadlock the two.
func connectWhileBusy(ctx context.Context, db *sql.DB) error {
	deadline := time.Now().Add(sqliteBusyTimeout)
	wait := 5 * time.Millisecond
	for {
		err := db.PingContext(ctx)
		var se *sqlite.Error
		if err == nil || !errors.As(err, &se) || se.Code()&0xff != sqlite3.SQLITE_BUSY || time.Now().After(deadline) {
			return err
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return err
		case <-t.C:
		}
		wait = min(2*wait, 200*time.Millisecond)
	}
}

// openSQLite opens path with one write connection and a read pool.
//
// Pragmas, per connection: WAL, so readers never block the writer nor it
// them; foreign_keys on (SQLite leaves them off by default); a busy timeout
// for other processes; and on the writer synchronous=FULL. In WAL mode
// NORMAL would skip the fsync at each commit and could lose the last
// commits on power loss; a lost commit here is a workspace whose 201 the
// client already has, or a file record whose upload was answered, and
// commits are rare next to the uploads they record, so the fsync is cheap
// insurance. Readers are query_only, so a write sent to the wrong pool fails
// loudly instead of racing the writer.
func openSQLite(ctx context.Context, path string, log *zap.Logger) (*Store, error) {
	if path == "" || path == ":memory:" || strings.HasPrefix(path, "file:") || strings.ContainsRune(path, '?') {
		// A memory database would be a different one per connection, and a
		// URI or '?' would be read as connection parameters.
		return nil, fmt.Errorf("%w: sqlite dsn must be a plain file path, got %q", ErrInvalidArgument, path)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("sqlstore: create database directory: %w", err)
	}
	// Create the file ourselves so it is private from the start: it holds key
	// hashes and sealed provider keys. SQLite gives its -wal and -shm files
	// the main file's permissions.
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("sqlstore: create database file: %w", err)
	}
	if err := f.Close(); err != nil {
		return nil, fmt.Errorf("sqlstore: create database file: %w", err)
	}

	common := fmt.Sprintf("_busy_timeout=%d&_foreign_keys=1", sqliteBusyTimeout.Milliseconds())
	w, err := openSQLiteDB(path + "?" + common + "&_journal_mode=WAL&_synchronous=FULL&_txlock=immediate")
	if err != nil {
		return nil, fmt.Errorf("sqlstore: open sqlite: %w", err)
	}
	w.SetMaxOpenConns(1)
	w.SetMaxIdleConns(1)
	w.SetConnMaxLifetime(0)
	w.SetConnMaxIdleTime(0)
	// Connect the writer first: it switches the file to WAL (persistent),
	// which readers must find already done.
	if err := connectWhileBusy(ctx, w); err != nil {
		_ = w.Close()
		return nil, fmt.Errorf("sqlstore: open sqlite: %w", err)
	}

	// Some file systems (network mounts) cannot hold WAL's shared memory and
	// SQLite then keeps its old journal without an error; readers would then
	// block the writer. Refuse rather than run slow and busy.
	var mode string
	if err := w.QueryRowContext(ctx, "PRAGMA journal_mode").Scan(&mode); err != nil {
		_ = w.Close()
		return nil, fmt.Errorf("sqlstore: sqlite journal mode: %w", err)
	}
	if !strings.EqualFold(mode, "wal") {
		_ = w.Close()
		return nil, fmt.Errorf("sqlstore: sqlite %s: journal mode is %q, want wal", path, mode)
	}

	r, err := openSQLiteDB(path + "?" + common + "&_query_only=1")
	if err != nil {
		_ = w.Close()
		return nil, fmt.Errorf("sqlstore: open sqlite: %w", err)
	}
	readers := max(4, runtime.GOMAXPROCS(0))
	r.SetMaxOpenConns(readers)
	r.SetMaxIdleConns(readers)
	r.SetConnMaxIdleTime(0)
	if err := connectWhileBusy(ctx, r); err != nil {
		_ = r.Close()
		_ = w.Close()
		return nil, fmt.Errorf("sqlstore: open sqlite: %w", err)
	}
	log.Info("metadata store opened", zap.String("driver", DriverSQLite), zap.String("path", path))
	return &Store{d: sqliteDialect, w: w, r: r, log: log, now: time.Now}, nil
}
