package gateway

import (
	"io"
	"net"
	"net/netip"
	"sync"
	"time"
)

// ConnLimits bound the connections a listener keeps open, so no client can
// take every file descriptor of the process by opening connections and
// sending nothing (each one costs a descriptor until a deadline ends it).
type ConnLimits struct {
	// Max is the most connections open at once, all clients together; it
	// should stay well below the process's descriptor limit, so refusing
	// remains possible. Zero means no limit.
	Max int
	// PerClient is the most connections open at once from one peer
	// address. Zero means no limit.
	PerClient int
	// Exempt are peers not limited per address: trusted proxies carry many
	// clients' connections from one address.
	Exempt []netip.Prefix
	// OnRefuse, if set, is told each refusal: "max" or "per_client".
	OnRefuse func(reason string)
}

// LimitListener returns ln with l enforced. A connection over a limit is
// accepted and answered at once with a 503 in the error envelope (with
// Retry-After) and closed, rather than left waiting in the kernel's backlog
// where a legitimate client could not tell a full gateway from a dead one.
func LimitListener(ln net.Listener, l ConnLimits) net.Listener {
	if l.Max <= 0 && l.PerClient <= 0 {
		return ln
	}
	return &limitListener{Listener: ln, limits: l, perAddr: map[netip.Addr]int{}}
}

type limitListener struct {
	net.Listener
	limits  ConnLimits
	mu      sync.Mutex
	total   int
	perAddr map[netip.Addr]int
}

func (l *limitListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		addr, counted := peerAddr(c), true
		if !addr.IsValid() || l.limits.PerClient <= 0 || containsAddr(l.limits.Exempt, addr) {
			counted = false
		}
		if reason := l.admit(addr, counted); reason != "" {
			if l.limits.OnRefuse != nil {
				l.limits.OnRefuse(reason)
			}
			go refuseConn(c)
			continue
		}
		return &limitedConn{Conn: c, release: func() { l.release(addr, counted) }}, nil
	}
}

// admit counts a new connection, or returns why it is refused.
func (l *limitListener) admit(addr netip.Addr, counted bool) string {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.limits.Max > 0 && l.total >= l.limits.Max {
		return "max"
	}
	if counted && l.perAddr[addr] >= l.limits.PerClient {
		return "per_client"
	}
	l.total++
	if counted {
		l.perAddr[addr]++
	}
	return ""
}

func (l *limitListener) release(addr netip.Addr, counted bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.total--
	if counted {
		if l.perAddr[addr]--; l.perAddr[addr] <= 0 {
			delete(l.perAddr, addr)
		}
	}
}

// refusal is the whole answer to a connection over a limit.
const refusal = "HTTP/1.1 503 Service Unavailable\r\n" +
	"Content-Type: application/json\r\n" +
	"Retry-After: 1\r\n" +
	"Connection: close\r\n" +
	"Content-Length: 83\r\n\r\n" +
	`{"error":{"code":503,"message":"Service temporarily unavailable","metadata":null}}` + "\n"

// refuseConn writes the refusal without reading the request (a client that
// sends nothing must not hold the goroutine) and closes the connection.
func refuseConn(c net.Conn) {
	_ = c.SetWriteDeadline(time.Now().Add(time.Second))
	_, _ = c.Write([]byte(refusal))
	_ = c.Close()
}

type limitedConn struct {
	net.Conn
	once    sync.Once
	release func()
}

func (c *limitedConn) Close() error {
	c.once.Do(c.release)
	return c.Conn.Close()
}

// ReadFrom keeps the TCP connection's io.ReaderFrom reachable through the
// wrapper: net/http sends a download from a local file with sendfile(2)
// only when the connection offers it.
func (c *limitedConn) ReadFrom(r io.Reader) (int64, error) {
	if rf, ok := c.Conn.(io.ReaderFrom); ok {
		return rf.ReadFrom(r)
	}
	return io.Copy(struct{ io.Writer }{c.Conn}, r)
}

// CloseWrite keeps the TCP connection's half-close reachable through the
// wrapper. net/http answers a request whose body it will not read (a 413
// refused on its declared length, say) and then half-closes, so that the
// client reads the answer and an end of stream before the connection is
// torn down; behind a wrapper without CloseWrite it skips that and the
// client, still sending, gets a reset in place of the answer's end.
func (c *limitedConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}

func peerAddr(c net.Conn) netip.Addr {
	if tcp, ok := c.RemoteAddr().(*net.TCPAddr); ok {
		return tcp.AddrPort().Addr().Unmap()
	}
	return netip.Addr{}
}

func containsAddr(prefixes []netip.Prefix, a netip.Addr) bool {
	for _, p := range prefixes {
		if p.Contains(a) {
			return true
		}
	}
	return false
}
