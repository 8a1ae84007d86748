package sqlstore

import (
	"database/sql"
	"errors"
	"testing"

	"github.com/aigateway/gateway/internal/outage"
)

// A COMMIT whose connection dies before its answer is of unknown outcome:
// the caller must keep what the write would name. A transaction refused
// before its COMMIT is not.
func TestCommitOnALostConnectionIsOfUnknownOutcome(t *testing.T) {
	pg := postgresBackend(t)
	dsn := pg.fresh(t)
	s := pg.open(t, dsn)
	killer := pg.open(t, dsn)
	ctx := testContext(t)

	err := s.inTx(ctx, func(tx *sql.Tx) error {
		var pid int
		if err := tx.QueryRowContext(ctx, `SELECT pg_backend_pid()`).Scan(&pid); err != nil {
			return err
		}
		var killed bool
		if err := killer.w.QueryRowContext(ctx, `SELECT pg_terminate_backend($1, 5000)`, pid).Scan(&killed); err != nil || !killed {
			t.Fatalf("terminate the transaction's backend: %v, %v", killed, err)
		}
		return nil
	})
	s.classify(&err) // as every method of the Store does
	if !errors.Is(err, outage.ErrOutcomeUnknown) || !errors.Is(err, outage.ErrUnavailable) {
		t.Errorf("commit on a terminated connection = %v, want ErrOutcomeUnknown and ErrUnavailable", err)
	}

	refused := errors.New("refused before the commit")
	err = s.inTx(ctx, func(*sql.Tx) error { return refused })
	if !errors.Is(err, refused) || errors.Is(err, outage.ErrOutcomeUnknown) {
		t.Errorf("a transaction refused before its commit = %v, want its own error only", err)
	}
}
