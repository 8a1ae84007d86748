// Package telemetry turns the gateway's OpenTelemetry traces on or off for
// the whole process. On, it installs a tracer provider that exports by OTLP
// (HTTP or gRPC) and the W3C trace-context propagator as the process's
// globals, which is where OpenTelemetry's instrumentation libraries (and
// the GCS client, which has no other way in) look for them. Off, it
// installs nothing, and the code that would instrument a call asks Enabled
// first and leaves its call as it was, so tracing off costs nothing on the
// request path.
package telemetry

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"runtime/debug"
	"strings"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.40.0"
	"go.opentelemetry.io/otel/trace"
)

// Protocols of the OTLP exporter.
const (
	ProtocolHTTP = "http/protobuf"
	ProtocolGRPC = "grpc"
)

// ServiceName is the service.name of the gateway's spans unless
// OTEL_SERVICE_NAME says otherwise.
const ServiceName = "aigateway"

// Options configure the traces; the zero value is off.
type Options struct {
	// Endpoint is the collector: a URL, or host:port. Empty: the
	// environment's OTEL_EXPORTER_OTLP_TRACES_ENDPOINT or
	// OTEL_EXPORTER_OTLP_ENDPOINT; none of them: traces are off.
	Endpoint string
	// Protocol is ProtocolHTTP or ProtocolGRPC; empty:
	// OTEL_EXPORTER_OTLP_[TRACES_]PROTOCOL, else ProtocolHTTP.
	Protocol string
	// SampleRatio is the share of the traces started here that are kept;
	// a caller's decision (the sampled flag of its traceparent) is followed.
	SampleRatio float64
	// Headers go with every export, over what OTEL_EXPORTER_OTLP_HEADERS
	// sets.
	Headers map[string]string
	// Insecure exports without TLS; an http:// endpoint implies it.
	Insecure bool
	// Version is the service.version of the spans; empty: the build's
	// VCS revision, if it has one.
	Version string
	// Getenv reads the environment; nil: os.Getenv.
	Getenv func(string) string
	// OnError receives export errors (a collector down, say); nil drops
	// them.
	OnError func(error)
}

var enabled atomic.Bool

// Enabled reports whether traces are on in this process. Code that
// instruments a call asks once, when it is built.
func Enabled() bool { return enabled.Load() }

// Tracing is the process's tracer provider while traces are on.
type Tracing struct {
	provider *sdktrace.TracerProvider
}

// Start turns traces on as o says, or returns (nil, nil) when o leaves
// them off. Shutdown ends them.
func Start(ctx context.Context, o Options) (*Tracing, error) {
	getenv := o.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	if strings.EqualFold(getenv("OTEL_SDK_DISABLED"), "true") || getenv("OTEL_TRACES_EXPORTER") == "none" {
		return nil, nil
	}
	// The endpoint is resolved here, not left to the exporter, which
	// reads the process's environment and not Options.Getenv.
	endpoint, exact := o.Endpoint, false
	if endpoint == "" {
		endpoint = getenv("OTEL_EXPORTER_OTLP_ENDPOINT")
		if v := getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"); v != "" {
			// The signal's own variable is the whole URL, path included.
			endpoint, exact = v, true
		}
	}
	if endpoint == "" {
		return nil, nil
	}
	protocol := firstOf(o.Protocol, getenv("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"), getenv("OTEL_EXPORTER_OTLP_PROTOCOL"), ProtocolHTTP)
	if o.SampleRatio < 0 || o.SampleRatio > 1 {
		return nil, fmt.Errorf("telemetry: sample ratio %v is not between 0 and 1", o.SampleRatio)
	}
	exporter, err := newExporter(ctx, protocol, endpoint, exact, o)
	if err != nil {
		return nil, err
	}
	res, err := resource.New(ctx,
		resource.WithAttributes(semconv.ServiceName(ServiceName), semconv.ServiceVersion(firstOf(o.Version, buildRevision(), "dev"))),
		// OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES win over the
		// defaults above.
		resource.WithFromEnv(),
		resource.WithHost(),
		resource.WithProcessPID(),
	)
	if err != nil && !errors.Is(err, resource.ErrPartialResource) {
		return nil, fmt.Errorf("telemetry: resource: %w", err)
	}
	tp := sdktrace.NewTracerProvider(
		sdktrace.WithBatcher(exporter),
		sdktrace.WithResource(res),
		sdktrace.WithSampler(sdktrace.ParentBased(sdktrace.TraceIDRatioBased(o.SampleRatio))),
	)
	otel.SetTracerProvider(tp)
	otel.SetTextMapPropagator(propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{}))
	if o.OnError != nil {
		otel.SetErrorHandler(otel.ErrorHandlerFunc(o.OnError))
	}
	enabled.Store(true)
	return &Tracing{provider: tp}, nil
}

// newExporter makes the OTLP exporter of protocol. Whatever the YAML leaves
// unset (timeouts, TLS files, compression, headers) the exporter takes from
// the OTEL_EXPORTER_OTLP_* environment itself.
//
// An http/protobuf endpoint without a path gets /v1/traces, as OTLP's base
// endpoint does, unless exact (OTEL_EXPORTER_OTLP_TRACES_ENDPOINT).
func newExporter(ctx context.Context, protocol, endpoint string, exact bool, o Options) (sdktrace.SpanExporter, error) {
	switch protocol {
	case ProtocolHTTP:
		var opts []otlptracehttp.Option
		if endpoint != "" {
			if strings.Contains(endpoint, "://") {
				u, err := url.Parse(endpoint)
				if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
					return nil, fmt.Errorf("telemetry: endpoint %q is not an http(s) URL", endpoint)
				}
				if !exact && (u.Path == "" || u.Path == "/") {
					u.Path = "/v1/traces"
				}
				opts = append(opts, otlptracehttp.WithEndpointURL(u.String()))
			} else {
				opts = append(opts, otlptracehttp.WithEndpoint(endpoint))
				if o.Insecure {
					opts = append(opts, otlptracehttp.WithInsecure())
				}
			}
		}
		if len(o.Headers) > 0 {
			opts = append(opts, otlptracehttp.WithHeaders(o.Headers))
		}
		return otlptracehttp.New(ctx, opts...)
	case ProtocolGRPC:
		var opts []otlptracegrpc.Option
		if endpoint != "" {
			if strings.Contains(endpoint, "://") {
				opts = append(opts, otlptracegrpc.WithEndpointURL(endpoint))
			} else {
				opts = append(opts, otlptracegrpc.WithEndpoint(endpoint))
				if o.Insecure {
					opts = append(opts, otlptracegrpc.WithInsecure())
				}
			}
		}
		if len(o.Headers) > 0 {
			opts = append(opts, otlptracegrpc.WithHeaders(o.Headers))
		}
		return otlptracegrpc.New(ctx, opts...)
	default:
		return nil, fmt.Errorf("telemetry: protocol %q is neither %s nor %s", protocol, ProtocolHTTP, ProtocolGRPC)
	}
}

// Shutdown exports what is left, within ctx, and turns traces off.
func (t *Tracing) Shutdown(ctx context.Context) error {
	if t == nil {
		return nil
	}
	enabled.Store(false)
	return t.provider.Shutdown(ctx)
}

// ShutdownTimeout bounds how long Shutdown may take at exit.
const ShutdownTimeout = 5 * time.Second

// Tracer returns the named tracer of the process's provider.
func Tracer(name string) trace.Tracer { return otel.Tracer(name) }

// buildRevision is the VCS revision the binary was built from, or "".
func buildRevision() string {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return ""
	}
	for _, s := range info.Settings {
		if s.Key == "vcs.revision" {
			return s.Value
		}
	}
	return ""
}

func firstOf(values ...string) string {
	for _, v := range values {
		if v != "" {
			return v
		}
	}
	return ""
}

// Install turns traces on with a provider made elsewhere: a program that
// embeds the gateway and has its own, or a test recording spans in memory
// (sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(recorder))).
func Install(tp *sdktrace.TracerProvider) *Tracing {
	otel.SetTracerProvider(tp)
	otel.SetTextMapPropagator(propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{}))
	enabled.Store(true)
	return &Tracing{provider: tp}
}
