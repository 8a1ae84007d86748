package testenv

import (
	"context"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

// A parent and a child span, sent under a caller's trace context by the
// SDK's OTLP exporters, come back from the collector's file with their ids,
// kinds, attributes, events and status as sent.
func TestCollectorReceivesSpans(t *testing.T) {
	exporters := map[string]func(context.Context, *Collector) (sdktrace.SpanExporter, error){
		"http": func(ctx context.Context, c *Collector) (sdktrace.SpanExporter, error) {
			return otlptracehttp.New(ctx, otlptracehttp.WithEndpointURL(c.HTTPEndpoint+"/v1/traces"))
		},
		"grpc": func(ctx context.Context, c *Collector) (sdktrace.SpanExporter, error) {
			return otlptracegrpc.New(ctx, otlptracegrpc.WithEndpoint(c.GRPCEndpoint), otlptracegrpc.WithInsecure())
		},
	}
	for protocol, newExporter := range exporters {
		t.Run(protocol, func(t *testing.T) {
			t.Parallel()
			c := StartCollector(t)
			ctx := context.Background()
			exp, err := newExporter(ctx, c)
			if err != nil {
				t.Fatal(err)
			}
			tp := sdktrace.NewTracerProvider(
				sdktrace.WithSyncer(exp),
				sdktrace.WithResource(resource.NewSchemaless(attribute.String("service.name", "testenv-"+protocol))),
			)
			t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
			tracer := tp.Tracer("testenv")

			// The caller's context, as a traceparent header would carry it.
			caller := trace.NewSpanContext(trace.SpanContextConfig{
				TraceID:    trace.TraceID{0x4b, 0xf9, 0x2f, 0x35, 0x77, 0xb3, 0x4d, 0xa6, 0xa3, 0xce, 0x92, 0x9d, 0x0e, 0x0e, 0x47, 0x36},
				SpanID:     trace.SpanID{0x00, 0xf0, 0x67, 0xaa, 0x0b, 0xa9, 0x02, 0xb7},
				TraceFlags: trace.FlagsSampled,
				Remote:     true,
			})
			ctx = trace.ContextWithRemoteSpanContext(ctx, caller)
			ctx, server := tracer.Start(ctx, "GET /api/v1/model/{author}/{slug}", trace.WithSpanKind(trace.SpanKindServer),
				trace.WithAttributes(attribute.String("http.route", "/api/v1/model/{author}/{slug}"), attribute.Int("http.response.status_code", 503)))
			_, client := tracer.Start(ctx, "PutObject", trace.WithSpanKind(trace.SpanKindClient),
				trace.WithAttributes(attribute.Bool("retried", true), attribute.Float64("ratio", 0.5), attribute.StringSlice("parts", []string{"a", "b"})))
			client.AddEvent("retry", trace.WithAttributes(attribute.Int("attempt", 2)))
			client.SetStatus(codes.Error, "storage unavailable")
			client.End()
			server.End()
			if err := tp.ForceFlush(ctx); err != nil {
				t.Fatal(err)
			}

			spans := c.WaitSpans(t, func(spans []Span) bool { return len(spans) >= 2 }, 10*time.Second)
			if len(spans) != 2 {
				t.Fatalf("got %d spans, want 2: %v", len(spans), spans)
			}
			byName := map[string]Span{}
			for _, s := range spans {
				byName[s.Name] = s
			}
			gotServer, gotClient := byName["GET /api/v1/model/{author}/{slug}"], byName["PutObject"]

			if gotServer.TraceID != caller.TraceID() || gotClient.TraceID != caller.TraceID() {
				t.Errorf("trace ids %s and %s, want the caller's %s", gotServer.TraceID, gotClient.TraceID, caller.TraceID())
			}
			if gotServer.SpanID != server.SpanContext().SpanID() || gotServer.ParentSpanID != caller.SpanID() {
				t.Errorf("server span %s parent %s, want %s parent %s", gotServer.SpanID, gotServer.ParentSpanID, server.SpanContext().SpanID(), caller.SpanID())
			}
			if gotClient.SpanID != client.SpanContext().SpanID() || gotClient.ParentSpanID != gotServer.SpanID {
				t.Errorf("client span %s parent %s, want %s parent %s", gotClient.SpanID, gotClient.ParentSpanID, client.SpanContext().SpanID(), gotServer.SpanID)
			}
			if gotServer.Kind != trace.SpanKindServer || gotClient.Kind != trace.SpanKindClient {
				t.Errorf("kinds %s and %s, want server and client", gotServer.Kind, gotClient.Kind)
			}
			if got := gotServer.Attributes["http.route"]; got != "/api/v1/model/{author}/{slug}" {
				t.Errorf("http.route = %#v", got)
			}
			if got := gotServer.Attributes["http.response.status_code"]; got != int64(503) {
				t.Errorf("http.response.status_code = %#v, want int64(503)", got)
			}
			if got := gotClient.Attributes["retried"]; got != true {
				t.Errorf("retried = %#v", got)
			}
			if got := gotClient.Attributes["ratio"]; got != 0.5 {
				t.Errorf("ratio = %#v", got)
			}
			if got, ok := gotClient.Attributes["parts"].([]any); !ok || len(got) != 2 || got[0] != "a" || got[1] != "b" {
				t.Errorf("parts = %#v", gotClient.Attributes["parts"])
			}
			if len(gotClient.Events) != 1 || gotClient.Events[0].Name != "retry" || gotClient.Events[0].Attributes["attempt"] != int64(2) {
				t.Errorf("events = %+v", gotClient.Events)
			}
			if gotClient.Status != (SpanStatus{Code: codes.Error, Message: "storage unavailable"}) || gotServer.Status.Code != codes.Unset {
				t.Errorf("statuses %+v and %+v", gotServer.Status, gotClient.Status)
			}
			if got := gotServer.Resource["service.name"]; got != "testenv-"+protocol {
				t.Errorf("service.name = %#v", got)
			}
			if gotServer.Scope != "testenv" {
				t.Errorf("scope = %q", gotServer.Scope)
			}
			if gotClient.Start.IsZero() || gotClient.End.Before(gotClient.Start) || gotServer.End.Before(gotClient.End) {
				t.Errorf("times: server %v-%v, client %v-%v", gotServer.Start, gotServer.End, gotClient.Start, gotClient.End)
			}
		})
	}
}

// Each test's collector has its own ports and file: spans sent to one are
// never read from another.
func TestCollectorsAreIndependent(t *testing.T) {
	a, b := StartCollector(t), StartCollector(t)
	if a.HTTPEndpoint == b.HTTPEndpoint || a.GRPCEndpoint == b.GRPCEndpoint {
		t.Fatalf("collectors share an endpoint: %+v %+v", a, b)
	}
	ctx := context.Background()
	exp, err := otlptracehttp.New(ctx, otlptracehttp.WithEndpointURL(a.HTTPEndpoint+"/v1/traces"))
	if err != nil {
		t.Fatal(err)
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	_, span := tp.Tracer("testenv").Start(ctx, "only-a")
	span.End()

	a.WaitSpans(t, func(spans []Span) bool { return len(spans) == 1 && spans[0].Name == "only-a" }, 10*time.Second)
	// The span was in a's file, so it had been through a's pipeline; b,
	// never sent one, has none.
	if spans := b.Spans(t); len(spans) != 0 {
		t.Fatalf("the other collector has spans: %v", spans)
	}
}
