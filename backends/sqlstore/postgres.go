package sqlstore

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/stdlib"
	"go.uber.org/zap"
)

// PostgreSQL SQLSTATEs the store maps to errors.
const (
	pgUniqueViolation     = "23505"
	pgForeignKeyViolation = "23503"
	pgOutOfRange          = "22003" // numeric_value_out_of_range
	// pgReadOnly (read_only_sql_transaction): a write reached a server that
	// takes none: a standby (the primary's DNS name still resolving to a
	// host that came back as one), or a server its operator or host made
	// read-only (default_transaction_read_only, as some managed services do
	// when the disk fills up). The store's own READ ONLY transactions only
	// read, so it never means a bug of the store's.
	pgReadOnly = "25006"
)

// pgMigrationLockKey names the advisory lock held while migrating: the
// ASCII bytes of "sqlstore".
const pgMigrationLockKey int64 = 0x73716c73746f7265

// Pool bounds. A request holds a connection only for one short statement or
// transaction; the bound keeps many replicas from exhausting the server's
// max_connections (100 by default).
const (
	pgMaxOpenConns    = 16
	pgConnMaxIdleTime = 5 * time.Minute
	pgConnMaxLifetime = 30 * time.Minute
)

var postgresDialect = dialect{
	name:          DriverPostgres,
	forUpdate:     " FOR UPDATE",
	migrationLock: fmt.Sprintf("SELECT pg_advisory_xact_lock(%d)", pgMigrationLockKey),
	migrationsTable: `CREATE TABLE IF NOT EXISTS schema_migrations (
		version    INTEGER     NOT NULL PRIMARY KEY,
		name       TEXT        NOT NULL,
		applied_at TIMESTAMPTZ NOT NULL
	)`,
	ts: func(t time.Time) any { return t },
	appendTS: func(b []byte, t time.Time) []byte {
		b = append(b, '"')
		b = t.AppendFormat(b, "2006-01-02T15:04:05.999999Z07:00")
		return append(b, '"')
	},
	violation:   postgresViolation,
	unavailable: postgresUnavailable,
}

// postgresViolation reads the SQLSTATE and, for unique violations, the
// constraint name: the schema names every primary key "<table>_pkey".
func postgresViolation(err error) violation {
	var pe *pgconn.PgError
	if !errors.As(err, &pe) {
		return violationNone
	}
	switch pe.Code {
	case pgUniqueViolation:
		if strings.HasSuffix(pe.ConstraintName, "_pkey") {
			return violationPrimaryKey
		}
		return violationUnique
	case pgForeignKeyViolation:
		return violationForeignKey
	case pgOutOfRange:
		return violationOutOfRange
	}
	return violationNone
}

// postgresUnavailable recognises a server that cannot serve right now:
// SQLSTATE classes 08 (connection exception) and 53 (insufficient
// resources, such as too many connections), 57P01-57P03 (administrator or
// crash shutdown, cannot connect now), 25006 (a server that takes no
// writes: a standby, or one made read-only), and pgx's own failures of the
// connection: dial (which covers a multi-host DSN finding no host that
// takes writes), timeout, a connection it had already closed (the server
// went away under it), or any error it marks safe to retry (nothing was
// sent).
func postgresUnavailable(err error) bool {
	var connectErr *pgconn.ConnectError
	if errors.As(err, &connectErr) || pgconn.Timeout(err) || pgconn.SafeToRetry(err) ||
		errors.Is(err, pgconn.ErrConnClosed) {
		return true
	}
	var pe *pgconn.PgError
	if !errors.As(err, &pe) {
		return false
	}
	switch {
	case strings.HasPrefix(pe.Code, "08"), strings.HasPrefix(pe.Code, "53"):
		return true
	case pe.Code == "57P01", pe.Code == "57P02", pe.Code == "57P03", pe.Code == pgReadOnly:
		return true
	}
	return false
}

// keepConn is the pgconn.Config.OnPgError of the store's connections: false
// closes the connection the error came on. pgx closes on FATAL errors (the
// server is ending the session anyway); the store closes on a read-only
// server too, so that the pool does not keep a connection that can never
// write again and the next one is dialled afresh: to the next host of a
// multi-host DSN that takes writes (target_session_attrs=read-write), or
// to wherever a DNS name of the primary points now.
func keepConn(pe *pgconn.PgError) bool {
	return !strings.EqualFold(pe.Severity, "FATAL") && pe.Code != pgReadOnly
}

// Bounds of each connection attempt to one host (dial, TLS, start-up and
// the read-write check) when the DSN sets no connect_timeout.
const (
	defaultConnectTimeout = 10 * time.Second
	// multiHostConnectTimeout is shorter: pgx tries a multi-host DSN's
	// hosts in order for every new connection, so after a failover whose
	// old primary's machine went silent (no refusal, just no answer) each
	// connection first waits this long on it, and the pool, whose
	// connections all died with that primary, makes new ones at once.
	multiHostConnectTimeout = 3 * time.Second
)

// openPostgres connects through pgx's database/sql driver. database/sql
// rather than pgxpool keeps one code path for both databases; pgx still
// caches prepared statements per connection (its default exec mode), so a
// repeated query costs one round trip.
func openPostgres(ctx context.Context, dsn string, log *zap.Logger) (*Store, error) {
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		// pgx redacts the password in its parse errors.
		return nil, fmt.Errorf("sqlstore: postgres dsn: %w", err)
	}
	if cfg.ConnectTimeout == 0 {
		// Without one a dial to an unreachable host waits for the kernel's
		// SYN retries (minutes): start-up should fail fast and say why.
		cfg.ConnectTimeout = defaultConnectTimeout
		if len(cfg.Fallbacks) > 0 {
			cfg.ConnectTimeout = multiHostConnectTimeout
		}
	}
	cfg.OnPgError = func(_ *pgconn.PgConn, pe *pgconn.PgError) bool { return keepConn(pe) }
	cfg.DialFunc = dialPostgres
	db := openConnector(stdlib.GetConnector(*cfg))
	db.SetMaxOpenConns(pgMaxOpenConns)
	db.SetMaxIdleConns(pgMaxOpenConns)
	db.SetConnMaxIdleTime(pgConnMaxIdleTime)
	db.SetConnMaxLifetime(pgConnMaxLifetime)
	if err := db.PingContext(ctx); err != nil {
		_ = db.Close()
		return nil, fmt.Errorf("sqlstore: connect postgres %s/%s: %w", cfg.Host, cfg.Database, err)
	}
	log.Info("metadata store opened", zap.String("driver", DriverPostgres),
		zap.String("host", cfg.Host), zap.String("database", cfg.Database))
	return &Store{d: postgresDialect, w: db, r: db, log: log, now: time.Now}, nil
}
