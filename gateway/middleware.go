package gateway

import (
	"crypto/rand"
	"encoding/base32"
	"io"
	"net/http"
	"net/netip"
	"runtime/debug"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/aigateway/gateway/gateway/accesslog"
	"github.com/aigateway/gateway/keys"
	"github.com/go-chi/chi/v5"
	"go.uber.org/zap"
)

// exchange is the per-request state shared by the middleware: the wrapped
// writer (status and bytes for the access log) and what later middleware
// learns (the key). One allocation carries all of it.
type exchange struct {
	http.ResponseWriter
	status    int
	bytes     int64
	wrote     bool
	requestID string
	key       *keys.APIKey
	// idHeader and etagHeader back the values of X-Request-Id and ETag:
	// one allocation less per request each than slices of their own.
	idHeader   [1]string
	etagHeader [1]string
}

func (e *exchange) WriteHeader(code int) {
	if !e.wrote {
		e.status = code
		e.wrote = code >= 200 // 1xx informational headers are not the answer
	}
	e.ResponseWriter.WriteHeader(code)
}

func (e *exchange) Write(p []byte) (int, error) {
	if !e.wrote {
		e.status, e.wrote = http.StatusOK, true
	}
	n, err := e.ResponseWriter.Write(p)
	e.bytes += int64(n)
	return n, err
}

// ReadFrom keeps the real writer's io.ReaderFrom reachable through the
// wrapper, so a download from a local file is sent with sendfile(2) rather
// than copied through a buffer.
func (e *exchange) ReadFrom(src io.Reader) (int64, error) {
	if !e.wrote {
		e.status, e.wrote = http.StatusOK, true
	}
	var n int64
	var err error
	if rf, ok := e.ResponseWriter.(io.ReaderFrom); ok {
		n, err = rf.ReadFrom(src)
	} else {
		n, err = io.Copy(struct{ io.Writer }{e.ResponseWriter}, src)
	}
	e.bytes += n
	return n, err
}

// Unwrap lets http.ResponseController reach the real writer (deadlines, flush).
func (e *exchange) Unwrap() http.ResponseWriter { return e.ResponseWriter }

// exchangeOf returns the request's exchange. observe hands the exchange
// itself down as the ResponseWriter, so every handler below reaches it
// with a type assertion: carrying it in the request's context would cost
// a context value and a copy of the request on every request. Nil when w
// did not come through observe (a handler driven directly by a test).
func exchangeOf(w http.ResponseWriter) *exchange {
	for {
		switch t := w.(type) {
		case *exchange:
			return t
		case interface{ Unwrap() http.ResponseWriter }:
			w = t.Unwrap()
		default:
			return nil
		}
	}
}

func requestIDOf(w http.ResponseWriter) string {
	if e := exchangeOf(w); e != nil {
		return e.requestID
	}
	return ""
}

// keyOf returns the authenticated key; the auth middleware guarantees it
// on every /api/v1 route.
func keyOf(w http.ResponseWriter) *keys.APIKey {
	if e := exchangeOf(w); e != nil {
		return e.key
	}
	return nil
}

// setStatus records a status for the access log when nothing was written
// (a client that went away).
func setStatus(w http.ResponseWriter, status int) {
	if e := exchangeOf(w); e != nil && !e.wrote {
		e.status = status
	}
}

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

// observe is the outermost middleware: request id, panic recovery, access
// log and metrics, in one wrapper.
func (a *API) observe(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		ex := &exchange{ResponseWriter: w, status: http.StatusOK}
		if id := r.Header.Get("X-Request-Id"); saneRequestID(id) {
			ex.requestID = id
		} else {
			ex.requestID = a.ids.next()
		}
		ex.idHeader[0] = ex.requestID
		w.Header()["X-Request-Id"] = ex.idHeader[:]
		// The Anthropic SDKs read the id from request-id.
		w.Header()["Request-Id"] = ex.idHeader[:]

		defer func() {
			if rec := recover(); rec != nil {
				if rec == http.ErrAbortHandler {
					// net/http's way to abort a response; not a bug. The
					// exchange is logged before the abort goes on up.
					a.record(r, ex, start, time.Since(start))
					panic(rec)
				}
				a.log.Error("panic serving request",
					zap.String("request_id", ex.requestID),
					zap.Any("panic", rec),
					zap.ByteString("stack", debug.Stack()))
				if !ex.wrote {
					writeJSON(ex, http.StatusInternalServerError, envelope{Error: envelopeError{Code: 500, Message: msgInternal}})
				} else {
					ex.status = http.StatusInternalServerError
				}
			}
			a.record(r, ex, start, time.Since(start))
		}()
		next.ServeHTTP(ex, r)
	})
}

// record writes the access log line and the metrics of one request.
func (a *API) record(r *http.Request, ex *exchange, start time.Time, elapsed time.Duration) {
	route := "unmatched"
	if rc := chi.RouteContext(r.Context()); rc != nil {
		// The routes are flat, so one pattern is the whole route; joining
		// (RoutePattern) would allocate on every request.
		switch len(rc.RoutePatterns) {
		case 0:
		case 1:
			route = rc.RoutePatterns[0]
		default:
			route = rc.RoutePattern()
		}
	}
	a.metrics.observe(route, r.Method, ex.status, elapsed)
	if !a.accessLog {
		return
	}
	keyID := ""
	if ex.key != nil {
		keyID = ex.key.ID
	}
	e := accesslog.Entry{
		Time:      start.Add(elapsed),
		Method:    r.Method,
		Route:     route,
		Status:    ex.status,
		Bytes:     ex.bytes,
		Duration:  elapsed,
		RequestID: ex.requestID,
		KeyID:     keyID,
		Client:    a.client(r),
	}
	if a.access != nil {
		a.access.Log(&e)
		return
	}
	a.log.Info("request", e.Fields()...)
}

// client is the client's address as the access log names it. Without
// trusted proxies it is the peer's host, sliced from RemoteAddr without
// parsing or allocating (this runs on every request).
func (a *API) client(r *http.Request) string {
	if len(a.trusted) == 0 {
		host := r.RemoteAddr
		if i := strings.LastIndexByte(host, ':'); i > 0 {
			host = strings.TrimSuffix(strings.TrimPrefix(host[:i], "["), "]")
		}
		return host
	}
	return clientAddr(r, a.trusted).String()
}

// clientAddr finds the client's address behind trusted proxies: the
// X-Forwarded-For list is walked from the right, skipping trusted hops; the
// leftmost entries are never believed since any client can write them.
func clientAddr(r *http.Request, trusted []netip.Prefix) netip.Addr {
	peer, err := netip.ParseAddrPort(r.RemoteAddr)
	if err != nil {
		return netip.Addr{}
	}
	addr := peer.Addr().Unmap()
	if len(trusted) == 0 || !isTrusted(addr, trusted) {
		return addr
	}
	hops := r.Header.Values("X-Forwarded-For")
	for i := len(hops) - 1; i >= 0; i-- {
		parts := strings.Split(hops[i], ",")
		for j := len(parts) - 1; j >= 0; j-- {
			hop, err := netip.ParseAddr(strings.TrimSpace(parts[j]))
			if err != nil {
				return addr // a malformed hop: stop at the last trusted peer
			}
			hop = hop.Unmap()
			if !isTrusted(hop, trusted) {
				return hop
			}
			addr = hop
		}
	}
	return addr
}

func isTrusted(a netip.Addr, trusted []netip.Prefix) bool {
	for _, p := range trusted {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// authenticate requires a valid key on every route below it.
func (a *API) authenticate(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		k, err := a.authenticateRequest(r)
		if err != nil {
			writeError(w, r, a.log, err)
			return
		}
		if ex := exchangeOf(w); ex != nil {
			ex.key = k
		}
		next.ServeHTTP(w, r)
	})
}

// managementOnly refuses ordinary keys with the spec's 403.
func (a *API) managementOnly(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if k := keyOf(w); k == nil || k.Role != keys.RoleManagement {
			writeError(w, r, a.log, keys.ErrForbidden)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// handlerFunc is the shape of every handler: it returns an error instead of
// writing one, and adapt turns the error into the envelope in one place.
type handlerFunc func(w http.ResponseWriter, r *http.Request) error

func (a *API) adapt(h handlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if err := h(w, r); err != nil {
			writeError(w, r, a.log, err)
		}
	}
}
