package providers

import (
	"context"
	"net"
	"net/http"
)

// DialThrough makes p, a *Client, open its connections with dial instead
// of over the network: a test reaches an in-memory stand-in
// (providertest.NewOpenAIInMemory) this way. Call it before p's first call.
func DialThrough(p Provider, dial func(ctx context.Context, network, addr string) (net.Conn, error)) {
	p.(*Client).http.Transport.(*http.Transport).DialContext = dial
}

// SettleTimeout is how long an upload whose caller went away after the
// whole file was sent waits for the provider's answer.
const SettleTimeout = settleTimeout
