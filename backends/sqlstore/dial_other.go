//go:build !linux

package sqlstore

import (
	"syscall"
	"time"
)

// boundUnacknowledged does nothing where TCP_USER_TIMEOUT does not exist:
// keepalives alone notice an idle connection's silent peer there.
func boundUnacknowledged(time.Duration) func(network, address string, c syscall.RawConn) error {
	return nil
}
