package gateway

import (
	"context"
	"io"
	"net/http"
	"strconv"
	"sync"
	"time"
	"unsafe"

	"github.com/aigateway/gateway/policy/keys"
	"github.com/go-chi/chi/v5"
	"go.opentelemetry.io/otel/trace"
)

// requestState is what the gateway learns of one request on its way through
// the middleware: its id, the calling key, the body's clock, and the writer
// that records the answer for the access log. One allocation carries all of
// it, and it travels in the request's context, the one typed way: a handler
// finds the key and the body clock with stateOf, whatever wraps the writer
// between the middleware and the handler.
//
// The state also answers for chi's routing context, so chi, finding one,
// neither wraps the context nor copies the request again: the state costs
// no allocation over chi's own on the lookup path. The routing contexts are
// pooled as chi pools them (their parameter slices keep their capacity);
// one goes back to the pool when observe returns.
type requestState struct {
	ctx   stateContext
	route *chi.Context
	w     recorder
	id    string
	start time.Time // when observe began the request
	key   *keys.APIKey
	body  *bodyClock // nil for a request without a body
	// mount names the handler mounted beside the API (see API.Guard), for
	// the access log and the metrics, where the router has no route.
	mount string
	// idHeader and etagHeader back the values of X-Request-Id and ETag: one
	// allocation less per request each than slices of their own.
	idHeader   [1]string
	etagHeader [1]string
	// idBytes backs an id made here, and rateLimitBytes and
	// rateLimitValues the rate-limit headers of the first decision (see
	// setRateLimitHeadersIn): strings over the state's own memory save an
	// allocation each per request.
	idBytes         [idBytesLen]byte
	rateLimitBytes  [3 * 20]byte
	rateLimitValues [3]string
	rateLimitUsed   bool
	// span is the request's server span while traces are on.
	span trace.Span
}

// idBytesLen holds a made id: the prefix (16 base32 digits and a dash)
// and a counter of at most 13 base-36 digits.
const idBytesLen = 32

// newID gives the request a new id from ids, kept in the state.
func (st *requestState) newID(ids *requestIDs) {
	b := append(st.idBytes[:0], ids.prefix...)
	st.id = frozenString(strconv.AppendUint(b, ids.n.Add(1), 36))
}

// frozenString returns b as a string without a copy. b must lie in a
// requestState and never be written again: a state is made for one request
// and never reused (only its routing context is pooled), so the string
// stays valid and unchanged for as long as anything holds it, the access
// log and the headers included.
func frozenString(b []byte) string { return unsafe.String(unsafe.SliceData(b), len(b)) }

// newRequestState returns r carrying a new state, the state, and the
// writer that records the answer (to be handed down instead of w). The
// caller calls release once the request has been served.
func newRequestState(w http.ResponseWriter, r *http.Request, routes chi.Routes) (*http.Request, *requestState) {
	st := &requestState{}
	st.ctx = stateContext{Context: r.Context(), st: st}
	st.route = routeContexts.Get().(*chi.Context)
	st.route.Reset()
	st.route.Routes = routes
	st.w = recorder{ResponseWriter: w, status: http.StatusOK}
	return r.WithContext(&st.ctx), st
}

var routeContexts = sync.Pool{New: func() any { return chi.NewRouteContext() }}

// release returns the routing context to the pool, as chi does once it
// has served a request: nothing may ask for the route after that.
func (st *requestState) release() { routeContexts.Put(st.route) }

type stateKey struct{}

// stateContext is the request's context: its parent's, plus the state and
// chi's routing context.
type stateContext struct {
	context.Context
	st *requestState
}

func (c *stateContext) Value(key any) any {
	switch key {
	case chi.RouteCtxKey:
		return c.st.route
	case stateKey{}:
		return c.st
	}
	return c.Context.Value(key)
}

// stateOf returns the request's state, or nil for a request that did not
// come through observe (a handler driven directly by a test).
func stateOf(ctx context.Context) *requestState {
	st, _ := ctx.Value(stateKey{}).(*requestState)
	return st
}

// callerOf returns the key that authenticated r, or nil.
func callerOf(r *http.Request) *keys.APIKey {
	if st := stateOf(r.Context()); st != nil {
		return st.key
	}
	return nil
}

// requestIDOf returns the id of r, or "" outside observe.
func requestIDOf(r *http.Request) string {
	if st := stateOf(r.Context()); st != nil {
		return st.id
	}
	return ""
}

// bodyClockOf returns the clock of r's body, or nil for a request without
// a body (or outside guardBody).
func bodyClockOf(r *http.Request) *bodyClock {
	if st := stateOf(r.Context()); st != nil {
		return st.body
	}
	return nil
}

// answerStarted reports whether a status line has been written for r.
func answerStarted(r *http.Request) bool {
	st := stateOf(r.Context())
	return st != nil && st.w.wrote
}

// setStatus records a status for the access log when nothing was written
// (a client that went away).
func setStatus(r *http.Request, status int) {
	if st := stateOf(r.Context()); st != nil && !st.w.wrote {
		st.w.status = status
	}
}

// recorder is the writer below observe: it records the status and the size
// of the answer for the access log and the metrics.
type recorder struct {
	http.ResponseWriter
	status int
	bytes  int64
	wrote  bool
}

func (e *recorder) WriteHeader(code int) {
	if !e.wrote {
		e.status = code
		e.wrote = code >= 200 // 1xx informational headers are not the answer
	}
	e.ResponseWriter.WriteHeader(code)
}

func (e *recorder) Write(p []byte) (int, error) {
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
func (e *recorder) ReadFrom(src io.Reader) (int64, error) {
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
func (e *recorder) Unwrap() http.ResponseWriter { return e.ResponseWriter }
