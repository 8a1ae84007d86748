package gateway

import (
	"crypto/rand"
	"encoding/base32"
	"strings"
	"sync/atomic"
)

// requestIDs holds what request ids are made of: a random per-process
// prefix and a counter, unique across replicas without a syscall per
// request. The ids themselves are made by requestState.newID, into the
// request's state, so that a request's id costs no allocation.
type requestIDs struct {
	prefix string
	n      atomic.Uint64
}

func newRequestIDs() *requestIDs {
	var b [10]byte
	_, _ = rand.Read(b[:])
	return &requestIDs{prefix: strings.ToLower(base32.StdEncoding.WithPadding(base32.NoPadding).EncodeToString(b[:])) + "-"}
}

// saneRequestID accepts an incoming X-Request-Id that is short and plain,
// so a caller's id can be followed through logs without letting it inject
// anything into them.
func saneRequestID(s string) bool {
	if len(s) == 0 || len(s) > 128 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '_' || c == '.' || c == ':') {
			return false
		}
	}
	return true
}
