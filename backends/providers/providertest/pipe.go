package providertest

import (
	"context"
	"net"
	"sync"
)

// pipeListener is a net.Listener whose connections are made in memory by
// its dial, as net.Pipe pairs. A goroutine blocked on one blocks on
// channels, which a testing/synctest bubble can see, where one blocked on a
// socket would keep the bubble's clock from ever moving.
type pipeListener struct {
	conns  chan net.Conn
	closed chan struct{}
	once   sync.Once
}

func newPipeListener() *pipeListener {
	return &pipeListener{conns: make(chan net.Conn), closed: make(chan struct{})}
}

// Accept waits for a dial.
func (l *pipeListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.closed:
		return nil, net.ErrClosed
	}
}

// Close makes Accept and later dials fail; connections already made stay.
func (l *pipeListener) Close() error {
	l.once.Do(func() { close(l.closed) })
	return nil
}

// Addr is a loopback address no socket listens on (port 0), so that the
// stand-in's URL is one a client accepts without TLS, and a client dialling
// it over the network rather than through dial is refused at once.
func (l *pipeListener) Addr() net.Addr {
	return &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 0}
}

// dial hands one end of a new pipe to Accept and returns the other.
func (l *pipeListener) dial(ctx context.Context) (net.Conn, error) {
	client, server := net.Pipe()
	select {
	case l.conns <- server:
		return client, nil
	case <-l.closed:
		client.Close()
		server.Close()
		return nil, &net.OpError{Op: "dial", Net: "pipe", Err: net.ErrClosed}
	case <-ctx.Done():
		client.Close()
		server.Close()
		return nil, ctx.Err()
	}
}
