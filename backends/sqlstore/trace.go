package sqlstore

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"strings"

	"github.com/XSAM/otelsql"
	"go.opentelemetry.io/otel/attribute"
	semconv "go.opentelemetry.io/otel/semconv/v1.40.0"

	"github.com/aigateway/gateway/internal/telemetry"
)

// With traces on, the database connections go through OpenTelemetry's
// database/sql instrumentation: a client span per statement and
// transaction, with the statement's text (placeholders, never the
// arguments, which hold key hashes and ids). Rows, prepares and session
// resets make no spans of their own: they would triple the spans of every
// request for no answer a reader of the trace needs. Off, the drivers are
// used as they are.

func traceOptions(system attribute.KeyValue) []otelsql.Option {
	return []otelsql.Option{
		otelsql.WithAttributes(system),
		otelsql.WithSpanNameFormatter(spanName),
		otelsql.WithSpanOptions(otelsql.SpanOptions{
			OmitConnResetSession: true,
			OmitConnPrepare:      true,
			OmitRows:             true,
			DisableErrSkip:       true,
		}),
	}
}

// spanName names a statement's span by its operation, as the semantic
// conventions ask ("SELECT", "INSERT"), and the others by otelsql's method
// ("sql.conn.begin_tx", "sql.tx.commit").
func spanName(_ context.Context, method otelsql.Method, query string) string {
	if query == "" {
		return string(method)
	}
	op, _, _ := strings.Cut(strings.TrimSpace(query), " ")
	if op == "" || len(op) > 16 {
		return string(method)
	}
	return strings.ToUpper(op)
}

// openSQLiteDB is sql.Open for the SQLite driver.
func openSQLiteDB(dsn string) (*sql.DB, error) {
	if !telemetry.Enabled() {
		return sql.Open("sqlite", dsn)
	}
	return otelsql.Open("sqlite", dsn, traceOptions(semconv.DBSystemNameSQLite)...)
}

// openConnector is sql.OpenDB.
func openConnector(c driver.Connector) *sql.DB {
	if !telemetry.Enabled() {
		return sql.OpenDB(c)
	}
	return otelsql.OpenDB(c, traceOptions(semconv.DBSystemNamePostgreSQL)...)
}
