package sqlstore

import (
	"context"
	"net"
	"time"
)

// A PostgreSQL host that goes silent (its machine gone, a network
// partition), rather than refusing, would hold every query already sent on
// a pooled connection until the kernel gives up retransmitting: about 15
// minutes on Linux, during which those requests hang instead of answering
// 503. Connections therefore notice a silent peer within deadPeerAfter:
// keepalive probes from idleProbe on while idle, and on Linux a bound on
// how long sent data may go unacknowledged (TCP_USER_TIMEOUT). A slow query
// is not cut: the server's kernel acknowledges the bytes of a query it is
// still running, and answers keepalives, whatever the query takes.
const (
	deadPeerAfter = 20 * time.Second
	idleProbe     = 5 * time.Second
	probeCount    = 3
)

// dialPostgres is the pgconn DialFunc of the store's connections.
func dialPostgres(ctx context.Context, network, addr string) (net.Conn, error) {
	d := net.Dialer{
		KeepAliveConfig: net.KeepAliveConfig{Enable: true, Idle: idleProbe, Interval: idleProbe, Count: probeCount},
		Control:         boundUnacknowledged(deadPeerAfter),
	}
	return d.DialContext(ctx, network, addr)
}
