package gateway

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/aigateway/gateway/files/blob"
	"github.com/aigateway/gateway/gateway/accesslog"
	"github.com/aigateway/gateway/internal/telemetry/telemetrytest"
	"github.com/aigateway/gateway/policy/keys"
	"github.com/aigateway/gateway/workspace"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// TestServerSpanContinuesTheCallersTrace: a request with a traceparent gets
// a server span in the caller's trace, child of the caller's span, named by
// the route template (never the raw path, which holds ids), and its access
// log line names that span.
func TestServerSpanContinuesTheCallersTrace(t *testing.T) {
	rec := telemetrytest.Record(t, sdktrace.ParentBased(sdktrace.NeverSample()))
	token, key, _ := keys.NewKey()
	var logged bytes.Buffer
	o := lookupOptions(t, lookupSetup{}, key, nil)
	w := accesslog.NewWriter(&logged, accesslog.Options{})
	o.AccessLog = w
	h := mustNew(t, o).Handler()

	const caller = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	req := httptest.NewRequest("GET", "/api/v1/model/openai/gpt-4o", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Traceparent", caller)
	req.Header.Set("Tracestate", "vendor=opaque")
	resp := httptest.NewRecorder()
	h.ServeHTTP(resp, req)
	if resp.Code != http.StatusOK {
		t.Fatalf("status %d: %s", resp.Code, resp.Body)
	}
	_ = w.Close()

	spans := rec.Ended()
	if len(spans) != 1 {
		t.Fatalf("%d spans ended, want the server span", len(spans))
	}
	s := spans[0]
	if got, want := s.Name(), "GET /api/v1/model/{author}/{slug}"; got != want {
		t.Errorf("span name %q, want %q", got, want)
	}
	if got := s.SpanContext().TraceID().String(); got != "4bf92f3577b34da6a3ce929d0e0e4736" {
		t.Errorf("trace id %s does not continue the caller's", got)
	}
	if got := s.Parent().SpanID().String(); got != "00f067aa0ba902b7" {
		t.Errorf("parent span %s, want the caller's", got)
	}
	if got := s.SpanContext().TraceState().String(); got != "vendor=opaque" {
		t.Errorf("tracestate %q, want the caller's", got)
	}
	attrs := map[string]string{}
	for _, a := range s.Attributes() {
		attrs[string(a.Key)] = a.Value.Emit()
		if strings.Contains(a.Value.Emit(), token) {
			t.Errorf("attribute %s holds the key", a.Key)
		}
	}
	if attrs["http.route"] != "/api/v1/model/{author}/{slug}" {
		t.Errorf("http.route %q", attrs["http.route"])
	}
	if attrs["http.response.status_code"] != "200" {
		t.Errorf("http.response.status_code %q", attrs["http.response.status_code"])
	}
	line := logged.String()
	if !strings.Contains(line, `"trace_id":"4bf92f3577b34da6a3ce929d0e0e4736","span_id":"`+s.SpanContext().SpanID().String()+`"`) {
		t.Errorf("access log line %s does not name the span", line)
	}
}

// TestServerSpanStartsATraceAndMarksErrors: without a traceparent the
// gateway starts a trace; an answer of 5xx sets the span's status to Error,
// a 4xx (the client's fault) leaves it unset.
func TestServerSpanStartsATraceAndMarksErrors(t *testing.T) {
	rec := telemetrytest.Record(t, sdktrace.AlwaysSample())
	token, key, _ := keys.NewKey()
	h := mustNew(t, lookupOptions(t, lookupSetup{}, key, nil)).Handler()
	for _, path := range []string{"/api/v1/model/openai/gpt-4o", "/api/v1/model/nobody/nothing"} {
		req := httptest.NewRequest("GET", path, nil)
		req.Header.Set("Authorization", "Bearer "+token)
		h.ServeHTTP(httptest.NewRecorder(), req)
	}
	spans := rec.Ended()
	if len(spans) != 2 {
		t.Fatalf("%d spans, want 2", len(spans))
	}
	for _, s := range spans {
		if s.Parent().IsValid() {
			t.Errorf("span %s has a parent %s; none was sent", s.Name(), s.Parent().SpanID())
		}
		if s.Status().Code == codes.Error {
			t.Errorf("span %s: status Error for a 2xx/4xx answer", s.Name())
		}
	}
	if spans[0].SpanContext().TraceID() == spans[1].SpanContext().TraceID() {
		t.Error("two requests share a trace")
	}

	// A store outage answers 503: the span says so.
	h = mustNew(t, Options{Workspaces: outageWorkspaces{}}).Handler()
	req := httptest.NewRequest("GET", "/api/v1/workspaces", nil)
	req.Header.Set("Authorization", "Bearer management")
	resp := httptest.NewRecorder()
	h.ServeHTTP(resp, req)
	if resp.Code != http.StatusServiceUnavailable {
		t.Fatalf("status %d, want 503", resp.Code)
	}
	last := rec.Ended()[len(rec.Ended())-1]
	if last.Name() != "GET /api/v1/workspaces" || last.Status().Code != codes.Error {
		t.Errorf("span %q status %v, want GET /api/v1/workspaces with Error", last.Name(), last.Status())
	}
}

// BenchmarkModelLookupChainTraced: the chain as served with traces on at a
// sample ratio of 0.01, against BenchmarkModelLookupChain (traces off).
func BenchmarkModelLookupChainTraced(b *testing.B) {
	telemetrytest.Record(b, sdktrace.ParentBased(sdktrace.TraceIDRatioBased(0.01)))
	benchmarkLookup(b, lookupSetup{rateLimit: true})
}

// outageWorkspaces is a workspace service whose store is out of reach.
type outageWorkspaces struct{ WorkspaceService }

func (outageWorkspaces) List(context.Context, string, workspace.Page) (workspace.Listing, error) {
	return workspace.Listing{}, fmt.Errorf("list: %w", blob.ErrUnavailable)
}
