package sqlstore

import "testing"

func TestValueRows(t *testing.T) {
	if got := (dialect{name: DriverPostgres}).valueRows(2, 3); got != "($1, $2, $3), ($4, $5, $6)" {
		t.Errorf("postgres: %q", got)
	}
	if got := (dialect{name: DriverSQLite}).valueRows(2, 3); got != "(?, ?, ?), (?, ?, ?)" {
		t.Errorf("sqlite: %q", got)
	}
}
