package s3_test

import (
	"strings"
	"testing"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/aigateway/gateway/files/blob"
	"github.com/aigateway/gateway/internal/telemetry/telemetrytest"
)

// TestCallsAreSpansOfTheCallersTrace, against a real S3 server: with
// traces on, an upload is an operation span (S3.PutObject) under the
// caller's span, with the HTTP attempt under it; a failed call marks its
// span an error.
func TestCallsAreSpansOfTheCallersTrace(t *testing.T) {
	srv := testServer(t)
	rec := telemetrytest.Record(t, nil)
	b := newBucket(t, srv.config(srv.createBucket(t)))

	ctx, parent := otel.Tracer("test").Start(t.Context(), "request")
	if _, err := b.Upload(ctx, "ws/file-1", strings.NewReader("hello"), 5, blob.UploadOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Stat(ctx, "ws/missing"); err == nil {
		t.Fatal("Stat of a missing object succeeded")
	}
	parent.End()

	byName := map[string]sdktrace.ReadOnlySpan{}
	var children []sdktrace.ReadOnlySpan
	for _, s := range rec.Ended() {
		if s.SpanContext().TraceID() != parent.SpanContext().TraceID() {
			continue
		}
		byName[s.Name()] = s
		children = append(children, s)
	}
	put, ok := byName["S3.PutObject"]
	if !ok {
		t.Fatalf("no S3.PutObject span among %d in the trace", len(children))
	}
	if put.Parent().SpanID() != parent.SpanContext().SpanID() || put.SpanKind() != trace.SpanKindClient {
		t.Errorf("S3.PutObject: parent %s kind %v; want the caller's span, client", put.Parent().SpanID(), put.SpanKind())
	}
	var attempt sdktrace.ReadOnlySpan
	for _, s := range children {
		if s.Parent().SpanID() == put.SpanContext().SpanID() {
			attempt = s
		}
	}
	if attempt == nil || attempt.Name() != "S3 HTTP PUT" {
		t.Errorf("no HTTP attempt span under S3.PutObject")
	}
	head, ok := byName["S3.HeadObject"]
	if !ok || head.Status().Code != codes.Error {
		t.Errorf("the failed HeadObject: span %v, status %+v; want an error", ok, head)
	}
}
