// Package telemetrytest turns traces on for a test, recording the spans in
// memory instead of exporting them.
package telemetrytest

import (
	"context"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/aigateway/gateway/internal/telemetry"
)

// Record turns traces on for the rest of tb, sampled by sampler (nil:
// every span), and returns the recorder of the ended spans. Traces go off
// again when tb ends. What is built while they are on is traced: build
// the code under test after calling it.
func Record(tb testing.TB, sampler sdktrace.Sampler) *tracetest.SpanRecorder {
	tb.Helper()
	if sampler == nil {
		sampler = sdktrace.AlwaysSample()
	}
	rec := tracetest.NewSpanRecorder()
	tr := telemetry.Install(sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec), sdktrace.WithSampler(sampler)))
	tb.Cleanup(func() { _ = tr.Shutdown(context.Background()) })
	return rec
}
