package providers_test

import (
	"strings"
	"testing"

	"go.opentelemetry.io/otel"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/aigateway/gateway/backends/providers"
	"github.com/aigateway/gateway/internal/telemetry/telemetrytest"
)

// TestCallsCarryTheTrace: with traces on, a call to a provider's Files API
// is a client span under the caller's span, and the provider receives the
// trace in traceparent; the span names the provider and method, and no
// attribute holds the key.
func TestCallsCarryTheTrace(t *testing.T) {
	rec := telemetrytest.Record(t, nil)

	for _, pc := range cases {
		t.Run(pc.name, func(t *testing.T) {
			h := newHarness(t, pc, providers.Options{})
			ctx, parent := otel.Tracer("test").Start(t.Context(), "request")
			_, err := h.p.Upload(ctx, h.key, providers.File{Name: "secret-plans.txt", Body: strings.NewReader("hello")})
			parent.End()
			if err != nil {
				t.Fatal(err)
			}
			sent := h.stand.Requests()[0].Header.Get("Traceparent")
			want := parent.SpanContext().TraceID().String()
			if !strings.HasPrefix(sent, "00-"+want+"-") {
				t.Fatalf("provider got traceparent %q, want one in trace %s", sent, want)
			}
			var client sdktrace.ReadOnlySpan
			for _, s := range rec.Ended() {
				if s.SpanKind() == trace.SpanKindClient && s.SpanContext().TraceID() == parent.SpanContext().TraceID() {
					client = s
				}
			}
			if client == nil {
				t.Fatal("no client span in the caller's trace")
			}
			if client.Parent().SpanID() != parent.SpanContext().SpanID() || client.Name() != pc.name+" POST" {
				t.Errorf("client span %q, parent %s; want %q under %s", client.Name(), client.Parent().SpanID(), pc.name+" POST", parent.SpanContext().SpanID())
			}
			if !strings.HasSuffix(sent, "-"+client.SpanContext().SpanID().String()+"-01") {
				t.Errorf("traceparent %q does not name the client span %s", sent, client.SpanContext().SpanID())
			}
			for _, a := range client.Attributes() {
				if v := a.Value.Emit(); strings.Contains(v, h.stand.Key) || strings.Contains(v, "secret-plans") {
					t.Errorf("attribute %s = %q holds the key or the file name", a.Key, v)
				}
			}
		})
	}
}
