// Package outage names the one failure that every dependency of the gateway
// reports alike: it cannot serve right now. The metadata store, the object
// storage and the limiters wrap ErrUnavailable, so that the edge answers one
// way (503 with Retry-After) whichever of them is down, and nothing above
// the adapters needs to know which kind of server failed.
package outage

import "errors"

// ErrUnavailable marks a failure of a dependency that may succeed when
// tried again later: unreachable, timed out, overloaded, out of space.
// Errors wrap it with %w; callers test with errors.Is.
var ErrUnavailable = errors.New("unavailable")

// ErrOutcomeUnknown marks a write whose commit was sent but never
// answered: the connection failed, or the server went down, after the
// request left. The write may have been made (a failover to a synchronous
// standby keeps it) or not. Errors wrap it beside ErrUnavailable; a caller
// must then keep what the write would refer to (the bytes of a file whose
// record may exist) and leave it to whatever reconciles the two later.
var ErrOutcomeUnknown = errors.New("outcome unknown")
