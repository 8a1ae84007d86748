package s3

import (
	"context"
	"net/http"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsmiddleware "github.com/aws/aws-sdk-go-v2/aws/middleware"
	"github.com/aws/smithy-go/middleware"
	"go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/codes"
	semconv "go.opentelemetry.io/otel/semconv/v1.40.0"
	"go.opentelemetry.io/otel/trace"
)

// Traces of the S3 calls, when the process has them on: a client span per
// operation ("S3.PutObject", with the RPC conventions' attributes and the
// bucket), and under it one span per HTTP attempt from OpenTelemetry's HTTP
// instrumentation, which also sends the traceparent on. The SDK's own
// tracing hook needs an adapter module that is not published for this SDK
// release, so the operation span is a middleware of the SDK's stack.

const tracerName = "github.com/aigateway/gateway/backends/storage/s3"

// traceOperations adds the operation span to every call's stack.
func traceOperations(bucket string) func(*middleware.Stack) error {
	tracer := otel.Tracer(tracerName)
	return func(stack *middleware.Stack) error {
		return stack.Initialize.Add(middleware.InitializeMiddlewareFunc("gatewayOperationSpan",
			func(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
				op := awsmiddleware.GetOperationName(ctx)
				ctx, span := tracer.Start(ctx, "S3."+op, trace.WithSpanKind(trace.SpanKindClient),
					trace.WithAttributes(
						semconv.RPCSystemNameKey.String("aws-api"),
						semconv.RPCMethod("S3/"+op),
						semconv.AWSS3Bucket(bucket),
					))
				defer span.End()
				out, md, err := next.HandleInitialize(ctx, in)
				if err != nil {
					span.RecordError(err)
					span.SetStatus(codes.Error, op+" failed")
				}
				return out, md, err
			}), middleware.After)
	}
}

// tracedClient sends the SDK's requests through OpenTelemetry's HTTP
// transport, over the SDK's own client (which keeps AWS_CA_BUNDLE's roots).
type tracedClient struct{ rt http.RoundTripper }

func newTracedClient(next aws.HTTPClient) tracedClient {
	return tracedClient{rt: otelhttp.NewTransport(roundTripper(next.Do),
		otelhttp.WithSpanNameFormatter(func(_ string, r *http.Request) string { return "S3 HTTP " + r.Method }))}
}

func (c tracedClient) Do(r *http.Request) (*http.Response, error) { return c.rt.RoundTrip(r) }

type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }
