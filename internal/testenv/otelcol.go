package testenv

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
)

// OtelcolVar names the OpenTelemetry Collector binary that
// deploy/testenv/otelcol.sh builds (deploy/testenv/otelcol: the OTLP
// receiver and the file exporter, at the release pinned in
// deploy/testenv/go.mod). Tests start collectors of their own with it.
const OtelcolVar = "GATEWAY_TEST_OTELCOL"

// Collector is a real OpenTelemetry Collector a test started: its own
// process, ports and export file, stopped when the test ends. It receives
// OTLP over HTTP and gRPC and writes every span it receives, as OTLP JSON,
// to a file that Spans and WaitSpans read back.
//
// Its methods may be called from several goroutines.
type Collector struct {
	// HTTPEndpoint is the OTLP/HTTP receiver, http://127.0.0.1:PORT; spans
	// are posted to HTTPEndpoint + "/v1/traces".
	HTTPEndpoint string
	// GRPCEndpoint is the OTLP/gRPC receiver, 127.0.0.1:PORT, without TLS.
	GRPCEndpoint string

	dir    string // config.yaml, spans.jsonl, otelcol.log
	cmd    *exec.Cmd
	exited chan struct{}
}

// Span is one span as the collector exported it.
type Span struct {
	TraceID      trace.TraceID
	SpanID       trace.SpanID
	ParentSpanID trace.SpanID // invalid (all zero) for a trace's root
	TraceState   string
	Name         string
	Kind         trace.SpanKind
	Start, End   time.Time
	// Attributes hold string, int64, float64, bool, []byte, []any and
	// map[string]any values, as OTLP's AnyValue does.
	Attributes map[string]any
	Events     []SpanEvent
	Status     SpanStatus
	// Resource is the attributes of the exporting process's resource
	// (service.name among them); Scope is the instrumentation scope's name.
	Resource map[string]any
	Scope    string
}

// SpanEvent is an event recorded on a span (an exception, for one).
type SpanEvent struct {
	Name       string
	Time       time.Time
	Attributes map[string]any
}

// SpanStatus is a span's status, in the OpenTelemetry API's codes.
type SpanStatus struct {
	Code    codes.Code
	Message string
}

// String names the span, its kind and its ids, for failure messages.
func (s Span) String() string {
	parent := "root"
	if s.ParentSpanID.IsValid() {
		parent = "parent " + s.ParentSpanID.String()
	}
	return fmt.Sprintf("%q %s trace %s span %s %s status %s", s.Name, s.Kind, s.TraceID, s.SpanID, parent, s.Status.Code)
}

// StartCollector starts a collector on free loopback ports and waits until
// both of its receivers take connections. It is stopped (SIGTERM, which
// flushes the export file, then SIGKILL after 10 s) when t ends. It skips
// the test, or fails it under CI=true, when GATEWAY_TEST_OTELCOL is unset.
func StartCollector(t testing.TB) *Collector {
	t.Helper()
	bin := Require(t, OtelcolVar)
	dir := t.TempDir()
	// A port taken between its choice and the bind makes the collector
	// exit; then other ports are tried.
	var err error
	for attempt := 1; attempt <= 3; attempt++ {
		c := &Collector{dir: dir}
		if err = c.start(t, bin, freePort(t), freePort(t)); err == nil {
			return c
		}
	}
	t.Fatalf("otelcol: %v", err)
	return nil
}

// collectorConfig receives OTLP on both protocols and exports traces to a
// file, flushed every 20 ms so that a test waits little for its spans. The
// collector's own metrics are off: by default they are served on port 8888,
// which parallel collectors would fight over.
const collectorConfig = `receivers:
  otlp:
    protocols:
      grpc:
        endpoint: 127.0.0.1:%d
      http:
        endpoint: 127.0.0.1:%d
exporters:
  file:
    path: %q
    format: json
    flush_interval: 20ms
service:
  telemetry:
    logs:
      level: warn
    metrics:
      level: none
  pipelines:
    traces:
      receivers: [otlp]
      exporters: [file]
`

func (c *Collector) start(t testing.TB, bin string, grpcPort, httpPort int) error {
	t.Helper()
	config := filepath.Join(c.dir, "config.yaml")
	if err := os.WriteFile(config, fmt.Appendf(nil, collectorConfig, grpcPort, httpPort, c.spansFile()), 0o600); err != nil {
		t.Fatal(err)
	}
	logf, err := os.OpenFile(c.logFile(), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer logf.Close() // the collector holds its own descriptor
	cmd := exec.Command(bin, "--config", "file:"+config)
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		t.Fatalf("otelcol: %v", err)
	}
	c.cmd, c.exited = cmd, make(chan struct{})
	go func() { _ = cmd.Wait(); close(c.exited) }()
	t.Cleanup(c.stop)

	c.GRPCEndpoint = "127.0.0.1:" + strconv.Itoa(grpcPort)
	c.HTTPEndpoint = "http://127.0.0.1:" + strconv.Itoa(httpPort)
	// Receivers start after the exporters: once both listen, a span sent
	// reaches the file.
	deadline := time.Now().Add(30 * time.Second)
	for {
		if listening(c.GRPCEndpoint) && listening(strings.TrimPrefix(c.HTTPEndpoint, "http://")) {
			return nil
		}
		select {
		case <-c.exited:
			return fmt.Errorf("exited before listening on ports %d and %d:\n%s", grpcPort, httpPort, c.Log())
		default:
		}
		if time.Now().After(deadline) {
			c.stop()
			return fmt.Errorf("not listening on ports %d and %d within 30s:\n%s", grpcPort, httpPort, c.Log())
		}
		time.Sleep(20 * time.Millisecond) // poll interval, bounded by the deadline
	}
}

func listening(addr string) bool {
	conn, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return false
	}
	_ = conn.Close()
	return true
}

// stop ends the collector and waits for it.
func (c *Collector) stop() {
	select {
	case <-c.exited:
		return
	default:
	}
	_ = c.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-c.exited:
	case <-time.After(10 * time.Second):
		_ = c.cmd.Process.Kill()
		<-c.exited
	}
}

func (c *Collector) spansFile() string { return filepath.Join(c.dir, "spans.jsonl") }
func (c *Collector) logFile() string   { return filepath.Join(c.dir, "otelcol.log") }

// Log is the collector's log so far (warnings and errors), for a failure
// message.
func (c *Collector) Log() string {
	b, err := os.ReadFile(c.logFile())
	if err != nil {
		return err.Error()
	}
	return string(b)
}

// Spans returns every span the collector has written to its file so far,
// in the order received. A span the collector received is in the file
// within its flush interval (20 ms), not at once: tests wait for theirs
// with WaitSpans.
func (c *Collector) Spans(t testing.TB) []Span {
	t.Helper()
	spans, err := c.readSpans()
	if err != nil {
		t.Fatalf("otelcol: %v", err)
	}
	return spans
}

// WaitSpans polls the collector's spans until cond holds for them and
// returns them; after timeout it fails the test with the spans it saw and
// the collector's log. It fails at once when the collector has exited.
func (c *Collector) WaitSpans(t testing.TB, cond func([]Span) bool, timeout time.Duration) []Span {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		spans, err := c.readSpans()
		if err != nil {
			t.Fatalf("otelcol: %v", err)
		}
		if cond(spans) {
			return spans
		}
		var exited bool
		select {
		case <-c.exited:
			exited = true
		default:
		}
		if exited || time.Now().After(deadline) {
			var b strings.Builder
			for _, s := range spans {
				fmt.Fprintf(&b, "\n  %s", s)
			}
			why := fmt.Sprintf("condition not met within %s", timeout)
			if exited {
				why = "collector exited"
			}
			t.Fatalf("otelcol: %s; %d spans received:%s\nlog:\n%s", why, len(spans), b.String(), c.Log())
		}
		time.Sleep(20 * time.Millisecond) // poll interval, bounded by the deadline
	}
}

// readSpans parses the export file: one OTLP JSON TracesData a line. A last
// line without its newline is still being written and is left for the next
// read.
func (c *Collector) readSpans() ([]Span, error) {
	b, err := os.ReadFile(c.spansFile())
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if i := bytes.LastIndexByte(b, '\n'); i >= 0 {
		b = b[:i+1]
	} else {
		b = nil
	}
	var spans []Span
	for n, line := range bytes.Split(b, []byte{'\n'}) {
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		var data otlpTracesData
		if err := json.Unmarshal(line, &data); err != nil {
			return nil, fmt.Errorf("%s line %d: %w", c.spansFile(), n+1, err)
		}
		for _, rs := range data.ResourceSpans {
			resource, err := attributes(rs.Resource.Attributes)
			if err != nil {
				return nil, fmt.Errorf("%s line %d: resource: %w", c.spansFile(), n+1, err)
			}
			for _, ss := range rs.ScopeSpans {
				for _, js := range ss.Spans {
					s, err := js.span()
					if err != nil {
						return nil, fmt.Errorf("%s line %d: span %q: %w", c.spansFile(), n+1, js.Name, err)
					}
					s.Resource, s.Scope = resource, ss.Scope.Name
					spans = append(spans, s)
				}
			}
		}
	}
	return spans, nil
}

// The OTLP JSON encoding of traces (opentelemetry-proto's JSON mapping):
// ids in hex, 64-bit integers as strings, enums as numbers.
type (
	otlpTracesData struct {
		ResourceSpans []struct {
			Resource struct {
				Attributes []otlpKeyValue `json:"attributes"`
			} `json:"resource"`
			ScopeSpans []struct {
				Scope struct {
					Name string `json:"name"`
				} `json:"scope"`
				Spans []otlpSpan `json:"spans"`
			} `json:"scopeSpans"`
		} `json:"resourceSpans"`
	}
	otlpSpan struct {
		TraceID      string         `json:"traceId"`
		SpanID       string         `json:"spanId"`
		ParentSpanID string         `json:"parentSpanId"`
		TraceState   string         `json:"traceState"`
		Name         string         `json:"name"`
		Kind         int            `json:"kind"`
		Start        otlpInt        `json:"startTimeUnixNano"`
		End          otlpInt        `json:"endTimeUnixNano"`
		Attributes   []otlpKeyValue `json:"attributes"`
		Events       []struct {
			Time       otlpInt        `json:"timeUnixNano"`
			Name       string         `json:"name"`
			Attributes []otlpKeyValue `json:"attributes"`
		} `json:"events"`
		Status struct {
			Code    int    `json:"code"` // 0 unset, 1 ok, 2 error: not the API's order
			Message string `json:"message"`
		} `json:"status"`
	}
	otlpKeyValue struct {
		Key   string       `json:"key"`
		Value otlpAnyValue `json:"value"`
	}
	otlpAnyValue struct {
		String *string  `json:"stringValue"`
		Bool   *bool    `json:"boolValue"`
		Int    *otlpInt `json:"intValue"`
		Double *float64 `json:"doubleValue"`
		Bytes  *string  `json:"bytesValue"`
		Array  *struct {
			Values []otlpAnyValue `json:"values"`
		} `json:"arrayValue"`
		KVList *struct {
			Values []otlpKeyValue `json:"values"`
		} `json:"kvlistValue"`
	}
	// otlpInt is a 64-bit integer, a string in OTLP JSON ("intValue":"42"),
	// though readers must take a number too.
	otlpInt string
)

func (n *otlpInt) UnmarshalJSON(b []byte) error {
	if s, err := strconv.Unquote(string(b)); err == nil {
		b = []byte(s)
	}
	if _, err := strconv.ParseInt(string(b), 10, 64); err != nil {
		return fmt.Errorf("integer %s: %w", b, err)
	}
	*n = otlpInt(b)
	return nil
}

func (js otlpSpan) span() (Span, error) {
	s := Span{TraceState: js.TraceState, Name: js.Name, Kind: trace.SpanKind(js.Kind)}
	var errs []error
	var err error
	s.TraceID, err = trace.TraceIDFromHex(js.TraceID)
	errs = append(errs, err)
	s.SpanID, err = trace.SpanIDFromHex(js.SpanID)
	errs = append(errs, err)
	if js.ParentSpanID != "" {
		s.ParentSpanID, err = trace.SpanIDFromHex(js.ParentSpanID)
		errs = append(errs, err)
	}
	s.Start, err = js.Start.time()
	errs = append(errs, err)
	s.End, err = js.End.time()
	errs = append(errs, err)
	s.Attributes, err = attributes(js.Attributes)
	errs = append(errs, err)
	for _, je := range js.Events {
		e := SpanEvent{Name: je.Name}
		e.Time, err = je.Time.time()
		errs = append(errs, err)
		e.Attributes, err = attributes(je.Attributes)
		errs = append(errs, err)
		s.Events = append(s.Events, e)
	}
	switch js.Status.Code {
	case 0:
		s.Status.Code = codes.Unset
	case 1:
		s.Status.Code = codes.Ok
	case 2:
		s.Status.Code = codes.Error
	default:
		errs = append(errs, fmt.Errorf("status code %d", js.Status.Code))
	}
	s.Status.Message = js.Status.Message
	return s, errors.Join(errs...)
}

func (n otlpInt) time() (time.Time, error) {
	if n == "" {
		return time.Time{}, nil
	}
	ns, err := strconv.ParseInt(string(n), 10, 64)
	if err != nil {
		return time.Time{}, fmt.Errorf("time: %w", err)
	}
	return time.Unix(0, ns), nil
}

func attributes(kvs []otlpKeyValue) (map[string]any, error) {
	m := make(map[string]any, len(kvs))
	for _, kv := range kvs {
		v, err := kv.Value.value()
		if err != nil {
			return nil, fmt.Errorf("attribute %s: %w", kv.Key, err)
		}
		m[kv.Key] = v
	}
	return m, nil
}

func (v otlpAnyValue) value() (any, error) {
	switch {
	case v.String != nil:
		return *v.String, nil
	case v.Bool != nil:
		return *v.Bool, nil
	case v.Int != nil:
		return strconv.ParseInt(string(*v.Int), 10, 64)
	case v.Double != nil:
		return *v.Double, nil
	case v.Bytes != nil:
		return base64.StdEncoding.DecodeString(*v.Bytes)
	case v.Array != nil:
		values := make([]any, 0, len(v.Array.Values))
		for _, e := range v.Array.Values {
			ev, err := e.value()
			if err != nil {
				return nil, err
			}
			values = append(values, ev)
		}
		return values, nil
	case v.KVList != nil:
		return attributes(v.KVList.Values)
	}
	return nil, nil // an empty value
}
