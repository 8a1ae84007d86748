package sqlstore

import (
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"net"
	"syscall"

	"github.com/aigateway/gateway/internal/outage"
	"go.uber.org/zap"
)

// classify marks *err as outage.ErrUnavailable when it says the database
// could not be reached or could not serve right now (connection refused or
// dropped, server shutting down or out of connections, SQLite's file busy,
// full or failing). Every exported method defers it, so callers tell an
// outage (503, try again) from a bug (500) by one error kind, whatever the
// database. The driver's error stays wrapped for the log.
//
// It also tells the log of each transition, once: the first call that
// meets an outage logs it at error level, the first that succeeds after it
// logs the recovery. The requests failing in between are counted (the
// gateway's 503s) but not logged one by one.
func (s *Store) classify(err *error) {
	if *err == nil {
		if s.down.Load() && s.down.CompareAndSwap(true, false) {
			s.log.Info("metadata database reachable again")
		}
		return
	}
	if !errors.Is(*err, outage.ErrUnavailable) && (unreachable(*err) || s.d.unavailable(*err)) {
		*err = fmt.Errorf("%w: %w", outage.ErrUnavailable, *err)
	}
	if errors.Is(*err, outage.ErrUnavailable) && s.down.CompareAndSwap(false, true) {
		s.log.Error("metadata database unavailable: requests that need it answer 503 until it is back", zap.Error(*err))
	}
}

// unreachable reports failures of the connection itself, the same on both
// databases.
func unreachable(err error) bool {
	var netErr net.Error
	switch {
	case errors.As(err, &netErr),
		errors.Is(err, driver.ErrBadConn),
		errors.Is(err, sql.ErrConnDone),
		errors.Is(err, io.ErrUnexpectedEOF),
		errors.Is(err, syscall.ECONNREFUSED),
		errors.Is(err, syscall.ECONNRESET),
		errors.Is(err, syscall.EPIPE):
		return true
	}
	return false
}
