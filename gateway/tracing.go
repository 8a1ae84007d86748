package gateway

import (
	"net/http"
	"strconv"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	semconv "go.opentelemetry.io/otel/semconv/v1.40.0"
	"go.opentelemetry.io/otel/trace"
)

// The server span is started here rather than by otelhttp's handler, with
// the SDK's own tracer and propagator: otelhttp computes every attribute and
// wraps the writer and the body before the sampler has spoken, 32
// allocations on each request even when the trace is not kept. Here a
// request whose trace is not sampled pays for the traceparent's parsing and
// one context; the attributes (semconv's HTTP server set, minus url.path,
// which holds ids) are made only for a span that is recorded.

// tracerName names the gateway's tracer in the spans' scope.
const tracerName = "github.com/aigateway/gateway/gateway"

// serverKind is the span option of every server span, made once: made per
// request it is an allocation.
var serverKind = trace.WithSpanKind(trace.SpanKindServer)

// startSpan starts the request's server span with tracer, child of the
// caller's traceparent if it sent one, as the parent of the request's
// context.
func (st *requestState) startSpan(r *http.Request, tracer trace.Tracer) {
	ctx := otel.GetTextMapPropagator().Extract(st.ctx.Context, headerCarrier(r.Header))
	// Named by method until record knows the route template.
	ctx, st.span = tracer.Start(ctx, r.Method, serverKind)
	st.ctx.Context = ctx
}

// headerCarrier is propagation.HeaderCarrier without its allocation per
// lookup: the propagators ask for their fields in lower case, which
// http.Header.Get canonicalises into a new string every time.
type headerCarrier http.Header

func (h headerCarrier) Get(key string) string {
	var v []string
	switch key {
	case "traceparent":
		v = h["Traceparent"]
	case "tracestate":
		v = h["Tracestate"]
	case "baggage":
		v = h["Baggage"]
	default:
		return http.Header(h).Get(key)
	}
	if len(v) == 0 {
		return ""
	}
	return v[0]
}

func (h headerCarrier) Set(key, value string) { http.Header(h).Set(key, value) }

func (h headerCarrier) Keys() []string { return propagation.HeaderCarrier(h).Keys() }

// endSpan names the span after its route, adds the attributes of the
// exchange, marks a server error, ends it and returns its ids.
func (st *requestState) endSpan(r *http.Request, route string, client string) trace.SpanContext {
	span := st.span
	if span == nil {
		return trace.SpanContext{}
	}
	if span.IsRecording() {
		span.SetName(r.Method + " " + route)
		scheme := "http"
		if r.TLS != nil {
			scheme = "https"
		}
		span.SetAttributes(
			semconv.HTTPRequestMethodKey.String(r.Method),
			semconv.HTTPRoute(route),
			semconv.HTTPResponseStatusCode(st.w.status),
			semconv.URLScheme(scheme),
			semconv.ServerAddress(r.Host),
			semconv.NetworkProtocolVersion(strconv.Itoa(r.ProtoMajor)+"."+strconv.Itoa(r.ProtoMinor)),
			semconv.ClientAddress(client),
			semconv.UserAgentOriginal(r.UserAgent()),
		)
		if st.w.status >= 500 {
			// The semantic conventions: a server span is an error for
			// 5xx only; a 4xx is the client's.
			span.SetStatus(codes.Error, http.StatusText(st.w.status))
			span.SetAttributes(semconv.ErrorTypeKey.String(strconv.Itoa(st.w.status)))
		}
	}
	span.End()
	return span.SpanContext()
}
