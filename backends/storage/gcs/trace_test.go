package gcs_test

import (
	"strings"
	"testing"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/trace"

	"github.com/aigateway/gateway/backends/storage/gcs"
	"github.com/aigateway/gateway/files/blob"
	"github.com/aigateway/gateway/internal/telemetry/telemetrytest"
	"github.com/aigateway/gateway/internal/testenv"
)

// TestCallsAreSpansOfTheCallersTrace, against the emulator: the GCS client
// traces through the process's tracer provider on its own; with traces
// on, an upload leaves its spans, HTTP requests included, in the caller's
// trace.
func TestCallsAreSpansOfTheCallersTrace(t *testing.T) {
	endpoint := testenv.Require(t, testenv.GCSEndpointVar)
	rec := telemetrytest.Record(t, nil)
	b := newBucket(t, gcs.Config{Bucket: createBucket(t, endpoint), Endpoint: endpoint})

	ctx, parent := otel.Tracer("test").Start(t.Context(), "request")
	if _, err := b.Upload(ctx, "ws/file-1", strings.NewReader("hello"), 5, blob.UploadOptions{}); err != nil {
		t.Fatal(err)
	}
	parent.End()
	var inTrace, httpClient int
	for _, s := range rec.Ended() {
		if s.SpanContext().TraceID() != parent.SpanContext().TraceID() || s.SpanContext().SpanID() == parent.SpanContext().SpanID() {
			continue
		}
		inTrace++
		if s.SpanKind() == trace.SpanKindClient {
			httpClient++
		}
	}
	if inTrace == 0 || httpClient == 0 {
		t.Fatalf("%d spans in the caller's trace, %d of them HTTP client spans; want both", inTrace, httpClient)
	}
}
