package sqlstore

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"net/url"
	"path/filepath"
	"testing"
	"time"

	"github.com/aigateway/gateway/policy/keys"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"
	"go.uber.org/zap/zaptest"

	"github.com/aigateway/gateway/internal/testenv"
)

// backend names a database server for the contract suite: fresh makes a
// new, empty database and returns its DSN; it goes away when the test ends.
type backend struct {
	driver string
	fresh  func(t testing.TB) string
}

// open returns a Store on dsn, closed when the test ends.
func (b backend) open(t testing.TB, dsn string) *Store {
	t.Helper()
	s, err := Open(testContext(t), b.driver, dsn, zaptest.NewLogger(t))
	if err != nil {
		t.Fatalf("Open(%s): %v", b.driver, err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return s
}

// store returns a Store on a fresh database.
func (b backend) store(t testing.TB) *Store {
	t.Helper()
	return b.open(t, b.fresh(t))
}

func TestSQLite(t *testing.T) {
	t.Parallel()
	runContract(t, sqliteBackend())
}

func TestPostgres(t *testing.T) {
	t.Parallel()
	runContract(t, postgresBackend(t))
}

// contractCase is one subtest of a contract suite, run on a database of
// each kind.
type contractCase struct {
	name string
	run  func(t *testing.T, b backend)
}

// runOnBothDatabases runs every case, in parallel, on SQLite and on
// PostgreSQL (failing under CI=true when the test servers are missing).
func runOnBothDatabases(t *testing.T, cases []contractCase) {
	t.Helper()
	for _, be := range []struct {
		name string
		get  func(testing.TB) backend
	}{{"SQLite", func(testing.TB) backend { return sqliteBackend() }}, {"Postgres", postgresBackend}} {
		t.Run(be.name, func(t *testing.T) {
			t.Parallel()
			b := be.get(t)
			for _, tt := range cases {
				t.Run(tt.name, func(t *testing.T) {
					t.Parallel()
					tt.run(t, b)
				})
			}
		})
	}
}

func testContext(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func sqliteBackend() backend {
	return backend{
		driver: DriverSQLite,
		fresh: func(t testing.TB) string {
			// A directory that does not exist yet: Open must create it.
			return filepath.Join(t.TempDir(), "data", "gateway.db")
		},
	}
}

// postgresBackend creates a database with a random name per test, so test
// runs and parallel tests never see each other's rows.
func postgresBackend(t testing.TB) backend {
	base := testenv.PostgresURL(t)
	return backend{
		driver: DriverPostgres,
		fresh:  func(t testing.TB) string { return createPostgresDatabase(t, base) },
	}
}

// createPostgresDatabase makes an empty database on the server of base and
// returns its URL. It is dropped at cleanup, after the stores on it closed
// (cleanups run last-registered first).
func createPostgresDatabase(t testing.TB, base string) string {
	t.Helper()
	ctx := testContext(t)
	cfg, err := pgx.ParseConfig(base)
	if err != nil {
		t.Fatalf("parse %s: %v", testenv.PostgresURLVar, err)
	}
	admin := stdlib.OpenDB(*cfg)
	t.Cleanup(func() { _ = admin.Close() })
	var b [6]byte
	_, _ = rand.Read(b[:])
	name := "sqlstore_test_" + hex.EncodeToString(b[:])
	if _, err := admin.ExecContext(ctx, "CREATE DATABASE "+name); err != nil {
		t.Fatalf("create database: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if _, err := admin.ExecContext(ctx, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)"); err != nil {
			t.Errorf("drop database %s: %v", name, err)
		}
	})
	u, err := url.Parse(base)
	if err != nil {
		t.Fatalf("parse %s: %v", testenv.PostgresURLVar, err)
	}
	u.Path = "/" + name
	return u.String()
}

// rawQuery reads one value with the store's read pool, for assertions on
// what the tables hold.
func rawQuery(t testing.TB, db *sql.DB, dest any, query string, args ...any) {
	t.Helper()
	if err := db.QueryRowContext(testContext(t), query, args...).Scan(dest); err != nil {
		t.Fatalf("%s: %v", query, err)
	}
}

// BenchmarkKeyByID measures the authentication cache-miss path: one
// prepared primary-key lookup.
func BenchmarkKeyByID(b *testing.B) {
	for name, be := range map[string]func(testing.TB) backend{
		"sqlite":   func(testing.TB) backend { return sqliteBackend() },
		"postgres": postgresBackend,
	} {
		b.Run(name, func(b *testing.B) {
			s := be(b).store(b)
			ctx := testContext(b)
			if err := s.EnsureUser(ctx, "alice"); err != nil {
				b.Fatal(err)
			}
			_, k, err := keys.NewKey()
			if err != nil {
				b.Fatal(err)
			}
			k.UserID, k.Role, k.Models = "alice", keys.RoleStandard, []string{"a/b", "c/d"}
			if err := s.CreateKey(ctx, k); err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if _, err := s.KeyByID(ctx, k.ID); err != nil {
						b.Error(err)
						return
					}
				}
			})
		})
	}
}
