package sqlstore

import (
	"net"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// The store's connections carry the bounds that make a silent peer fail
// them: TCP_USER_TIMEOUT and keepalives, read back from the socket.
func TestDialPostgresBoundsASilentPeer(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	conn, err := dialPostgres(t.Context(), "tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	raw, err := conn.(*net.TCPConn).SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var userTimeout, keepalive, idle int
	var gerr error
	_ = raw.Control(func(fd uintptr) {
		if userTimeout, gerr = unix.GetsockoptInt(int(fd), unix.IPPROTO_TCP, unix.TCP_USER_TIMEOUT); gerr != nil {
			return
		}
		if keepalive, gerr = unix.GetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_KEEPALIVE); gerr != nil {
			return
		}
		idle, gerr = unix.GetsockoptInt(int(fd), unix.IPPROTO_TCP, unix.TCP_KEEPIDLE)
	})
	if gerr != nil {
		t.Fatal(gerr)
	}
	if time.Duration(userTimeout)*time.Millisecond != deadPeerAfter || keepalive != 1 || time.Duration(idle)*time.Second != idleProbe {
		t.Errorf("TCP_USER_TIMEOUT %d ms, SO_KEEPALIVE %d, TCP_KEEPIDLE %d s; want %v, on, %v", userTimeout, keepalive, idle, deadPeerAfter, idleProbe)
	}
}
