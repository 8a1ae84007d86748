package gateway

import (
	"crypto/rand"
	"encoding/base32"
	"strconv"
	"strings"
	"sync/atomic"
)

// requestIDs makes request ids: a random per-process prefix and a counter,
// unique across replicas without a syscall per request.
type requestIDs struct {
	prefix string
	n      atomic.Uint64
}

func newRequestIDs() *requestIDs {
	var b [10]byte
	_, _ = rand.Read(b[:])
	return &requestIDs{prefix: strings.ToLower(base32.StdEncoding.WithPadding(base32.NoPadding).EncodeToString(b[:])) + "-"}
}

func (g *requestIDs) next() string {
	return g.prefix + strconv.FormatUint(g.n.Add(1), 36)
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
