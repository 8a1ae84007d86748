package sqlstore

import (
	"database/sql"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// dialect holds what differs between SQLite and PostgreSQL. Queries are
// otherwise shared: both accept $1-style parameters, ON CONFLICT, RETURNING
// and CAST.
type dialect struct {
	name string
	// forUpdate ends a SELECT whose row must stay locked until the
	// transaction ends. Empty on SQLite, where the one writer already
	// serializes every write transaction.
	forUpdate string
	// migrationLock runs first in the migration transaction, so processes
	// starting at once migrate one after another. Empty on SQLite, where
	// BEGIN IMMEDIATE already takes the database's write lock.
	migrationLock string
	// migrationsTable creates the table recording applied versions.
	migrationsTable string
	// ts encodes a time as a column value (already truncated to µs, UTC).
	ts func(time.Time) any
	// appendTS appends a time (truncated to µs, UTC) as the usage
	// statements (usage_record.go) read it from JSON.
	appendTS func([]byte, time.Time) []byte
	// violation says which kind of constraint err broke, if any, from the
	// driver's error codes.
	violation func(err error) violation
	// unavailable says err is the database refusing service for now (server
	// shutting down, out of connections; SQLite busy, full or failing), from
	// the driver's error codes. Failures of the connection itself are
	// recognised for both databases by unreachable.
	unavailable func(err error) bool
}

// violation is the kind of constraint an insert or update broke.
type violation int

const (
	violationNone violation = iota
	violationPrimaryKey
	violationUnique
	violationForeignKey
	// violationOutOfRange: a number past what its column holds (an integer
	// sum that overflowed).
	violationOutOfRange
)

// timeCol scans a time column written by dialect.ts: Unix microseconds on
// SQLite, timestamptz on PostgreSQL. The result is in UTC.
type timeCol struct{ t *time.Time }

func (c timeCol) Scan(src any) error {
	switch v := src.(type) {
	case int64:
		*c.t = time.UnixMicro(v).UTC()
	case time.Time:
		*c.t = v.UTC()
	default:
		return fmt.Errorf("sqlstore: cannot scan %T into a time", src)
	}
	return nil
}

// nullTimeCol is timeCol for a nullable column: NULL scans as nil.
type nullTimeCol struct{ t **time.Time }

func (c nullTimeCol) Scan(src any) error {
	if src == nil {
		*c.t = nil
		return nil
	}
	var t time.Time
	if err := (timeCol{&t}).Scan(src); err != nil {
		return err
	}
	*c.t = &t
	return nil
}

// nullTS encodes an optional time; nil becomes NULL.
func (d dialect) nullTS(t *time.Time) any {
	if t == nil {
		return nil
	}
	return d.ts(*t)
}

// listArg encodes a string list as JSON text. nil becomes NULL and an empty
// list '[]', because the two mean different things (e.g. "every model" and
// "no model" in a key's allowlist).
func listArg(v []string) (any, error) {
	if v == nil {
		return nil, nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return string(b), nil
}

// listCol scans what listArg wrote: NULL as nil, '[]' as an empty, non-nil
// slice.
type listCol struct{ v *[]string }

func (c listCol) Scan(src any) error {
	var raw []byte
	switch v := src.(type) {
	case nil:
		*c.v = nil
		return nil
	case string:
		raw = []byte(v)
	case []byte:
		raw = v
	default:
		return fmt.Errorf("sqlstore: cannot scan %T into a string list", src)
	}
	var out []string
	if err := json.Unmarshal(raw, &out); err != nil {
		return fmt.Errorf("sqlstore: decode string list: %w", err)
	}
	if out == nil {
		out = []string{}
	}
	*c.v = out
	return nil
}

var (
	_ sql.Scanner = timeCol{}
	_ sql.Scanner = nullTimeCol{}
	_ sql.Scanner = listCol{}
)

// valueRows writes the VALUES list of a multi-row insert: rows tuples of
// cols parameters. PostgreSQL numbers them ($1, $2, …); SQLite gets plain
// "?": it resolves each "$N" by a linear search of the statement's
// parameters, which made a statement's preparation grow with the square of
// its rows.
func (d dialect) valueRows(rows, cols int) string {
	var b strings.Builder
	b.Grow(rows * cols * 7)
	n := 0
	for r := range rows {
		if r > 0 {
			b.WriteString(", ")
		}
		b.WriteByte('(')
		for c := range cols {
			if c > 0 {
				b.WriteString(", ")
			}
			n++
			if d.name == DriverSQLite {
				b.WriteByte('?')
			} else {
				b.WriteByte('$')
				b.WriteString(strconv.Itoa(n))
			}
		}
		b.WriteByte(')')
	}
	return b.String()
}
