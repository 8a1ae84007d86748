package gateway

import (
	"cmp"
	"net/http"
	"net/netip"
	"runtime/debug"
	"strings"
	"time"

	"github.com/aigateway/gateway/gateway/accesslog"
	"github.com/aigateway/gateway/internal/telemetry"
	"github.com/go-chi/chi/v5"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/trace"
	"go.uber.org/zap"
)

// observation is what observe needs: where the access log and the
// metrics go, how request ids are made, which proxies are believed.
type observation struct {
	log       *zap.Logger
	metrics   *httpMetrics
	accessLog bool
	access    *accesslog.Writer
	ids       *requestIDs
	trusted   []netip.Prefix
	// traced: traces are on; each request has a server span, which
	// record names after its route.
	traced bool
	tracer trace.Tracer
}

// observe is the outermost middleware: the request's state (see
// requestState), its id, panic recovery, access log and metrics, in one
// wrapper. next is the router (its routes answer chi.RouteContext's Routes).
//
// With traces on, it also starts the request's server span (see
// startSpan), child of the caller's traceparent or the root of a new
// trace, which record names after the route template the router chose.
func observe(o *observation) func(http.Handler) http.Handler {
	// Asked when the handler is built: the process turns traces on
	// before it builds its handlers.
	o.traced = telemetry.Enabled()
	if o.traced {
		o.tracer = otel.Tracer(tracerName)
	}
	return o.observed
}

// observed is observe's wrapper around next.
func (o *observation) observed(next http.Handler) http.Handler {
	routes, _ := next.(chi.Routes)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		r, st := newRequestState(w, r, routes)
		st.start = start
		defer st.release()
		if o.traced {
			st.startSpan(r, o.tracer)
		}
		if id := headerValue(r.Header, "X-Request-Id"); saneRequestID(id) {
			st.id = id
		} else {
			st.newID(o.ids)
		}
		st.idHeader[0] = st.id
		w.Header()["X-Request-Id"] = st.idHeader[:]
		// The Anthropic SDKs read the id from request-id.
		w.Header()["Request-Id"] = st.idHeader[:]

		defer func() {
			if rec := recover(); rec != nil {
				if rec == http.ErrAbortHandler {
					// net/http's way to abort a response; not a bug. The
					// exchange is logged before the abort goes on up: as
					// 499 when nothing was sent to a client that went
					// away (a handler beside the API, the console, may
					// abort without saying why).
					if !st.w.wrote && r.Context().Err() != nil {
						st.w.status = statusClientClosedReq
					}
					o.record(r, st, start, time.Since(start))
					panic(rec)
				}
				o.log.Error("panic serving request",
					zap.String("request_id", st.id),
					zap.Any("panic", rec),
					zap.ByteString("stack", debug.Stack()))
				if !st.w.wrote {
					writeJSON(&st.w, http.StatusInternalServerError, envelope{Error: envelopeError{Code: 500, Message: msgInternal}})
				} else {
					st.w.status = http.StatusInternalServerError
				}
			}
			o.record(r, st, start, time.Since(start))
		}()
		next.ServeHTTP(&st.w, r)
	})
}

// record writes the access log line and the metrics of one request.
func (o *observation) record(r *http.Request, st *requestState, start time.Time, elapsed time.Duration) {
	route := cmp.Or(routePattern(r), st.mount, "unmatched")
	o.metrics.observe(route, r.Method, st.w.status, elapsed)
	var span trace.SpanContext
	if o.traced {
		span = st.endSpan(r, route, o.client(r))
	}
	if !o.accessLog {
		return
	}
	keyID := ""
	if st.key != nil {
		keyID = st.key.ID
	}
	e := accesslog.Entry{
		Time:      start.Add(elapsed),
		Method:    r.Method,
		Route:     route,
		Status:    st.w.status,
		Bytes:     st.w.bytes,
		Duration:  elapsed,
		RequestID: st.id,
		KeyID:     keyID,
		Client:    o.client(r),
		TraceID:   span.TraceID(),
		SpanID:    span.SpanID(),
	}
	if o.access != nil {
		o.access.Log(&e)
		return
	}
	o.log.Info("request", e.Fields()...)
}

// client is the client's address as the access log names it. Without
// trusted proxies it is the peer's host, sliced from RemoteAddr without
// parsing or allocating (this runs on every request).
func (o *observation) client(r *http.Request) string {
	if len(o.trusted) == 0 {
		host := r.RemoteAddr
		if i := strings.LastIndexByte(host, ':'); i > 0 {
			host = strings.TrimSuffix(strings.TrimPrefix(host[:i], "["), "]")
		}
		return host
	}
	return clientAddr(r, o.trusted).String()
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

// routePattern is the route template the router matched for r
// ("/api/v1/keys/{hash}"), or "" before routing or when none matched.
func routePattern(r *http.Request) string {
	rc := chi.RouteContext(r.Context())
	if rc == nil {
		return ""
	}
	// The routes are flat, so one pattern is the whole route; joining
	// (RoutePattern) would allocate on every request.
	switch len(rc.RoutePatterns) {
	case 0:
		return ""
	case 1:
		return rc.RoutePatterns[0]
	default:
		return rc.RoutePattern()
	}
}
