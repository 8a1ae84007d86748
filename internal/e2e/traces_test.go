package e2e

import (
	"bytes"
	"crypto/rand"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/aigateway/gateway/configs"
	"github.com/aigateway/gateway/internal/testenv"
)

// TestTracesReachACollector runs the real binary against a real
// OpenTelemetry Collector and S3 server. An upload sent with a traceparent
// is one trace continuing the caller's: the gateway's server span, named by
// its route, is the child of the caller's span and the ancestor of the
// storage (S3) and metadata store spans, and the access log line names it.
// The sample ratio is 0, so a request without a traceparent leaves
// nothing, while the caller's sampled decision is followed. Export goes
// over OTLP/HTTP; a second gateway exports over gRPC.
func TestTracesReachACollector(t *testing.T) {
	t.Parallel() // it mostly waits: for processes to start, for spans to arrive
	col := testenv.StartCollector(t)
	endpoint := testenv.Require(t, testenv.S3EndpointVar)
	bin := buildGatewayBinary(t)

	for _, protocol := range []string{"http/protobuf", "grpc"} {
		t.Run(protocol, func(t *testing.T) {
			t.Parallel()
			cfg := fleetConfig(t)
			fileConfigureS3(t, &cfg, endpoint, testenv.Require(t, testenv.S3AccessKeyVar), testenv.Require(t, testenv.S3SecretKeyVar))
			cfg.Telemetry.Traces = configs.Traces{Endpoint: col.HTTPEndpoint, Protocol: protocol, SampleRatio: 0}
			if protocol == "grpc" {
				cfg.Telemetry.Traces.Endpoint, cfg.Telemetry.Traces.Insecure = col.GRPCEndpoint, true
			}
			cfgPath := writeFleetConfig(t, cfg)
			key := fleetKey(t, cfgPath, "tracer")
			gw := startFleet(t, bin, cfgPath, 1)[0]

			// Not sampled here, and no caller asked: no span.
			lookup, _ := http.NewRequest("GET", gw.base+"/api/v1/model/openai/gpt-4o", nil)
			lookup.Header.Set("Authorization", "Bearer "+key)
			expectStatus(t, lookup, http.StatusOK)

			callerTrace, callerSpan := randomTraceID(), randomSpanID()
			var body bytes.Buffer
			mw := multipart.NewWriter(&body)
			_ = mw.WriteField("purpose", "user_data")
			part, _ := mw.CreateFormFile("file", "quarterly-secrets.txt")
			_, _ = io.WriteString(part, "hello, traced world\n")
			_ = mw.Close()
			upload, _ := http.NewRequest("POST", gw.base+"/api/v1/files", &body)
			upload.Header.Set("Authorization", "Bearer "+key)
			upload.Header.Set("Content-Type", mw.FormDataContentType())
			upload.Header.Set("Traceparent", fmt.Sprintf("00-%s-%s-01", callerTrace, callerSpan))
			expectStatus(t, upload, http.StatusOK)

			var server testenv.Span
			spans := col.WaitSpans(t, func(spans []testenv.Span) bool {
				server = testenv.Span{}
				inTrace := 0
				for _, s := range spans {
					if s.TraceID != callerTrace {
						continue
					}
					inTrace++
					if s.Name == "POST /api/v1/files" {
						server = s
					}
				}
				// The server span ends last: once it is there, its
				// children, ended before it, were exported with or before it.
				return server.Name != "" && inTrace > 1
			}, 30*time.Second)

			if server.ParentSpanID != callerSpan || server.Kind != trace.SpanKindServer {
				t.Errorf("server span %v: parent %s kind %v; want the caller's span %s, server", server, server.ParentSpanID, server.Kind, callerSpan)
			}
			if server.Attributes["http.route"] != "/api/v1/files" || server.Attributes["http.response.status_code"] != int64(200) {
				t.Errorf("server span attributes %v", server.Attributes)
			}
			if server.Resource["service.name"] != "aigateway" {
				t.Errorf("service.name %v", server.Resource["service.name"])
			}
			var trace1 []testenv.Span
			for _, s := range spans {
				if s.TraceID == callerTrace {
					trace1 = append(trace1, s)
				}
				if strings.HasPrefix(s.Name, "GET /api/v1/model/") {
					t.Errorf("the unsampled lookup left span %v", s)
				}
				for k, v := range s.Attributes {
					if str, ok := v.(string); ok && (strings.Contains(str, key) || strings.Contains(str, "quarterly-secrets")) {
						t.Errorf("span %s attribute %s holds the key or the file name", s.Name, k)
					}
				}
			}
			byID := map[trace.SpanID]testenv.Span{}
			for _, s := range trace1 {
				byID[s.SpanID] = s
			}
			under := func(s testenv.Span) bool {
				for p := s.ParentSpanID; p.IsValid(); p = byID[p].ParentSpanID {
					if p == server.SpanID {
						return true
					}
					if _, ok := byID[p]; !ok {
						return false
					}
				}
				return false
			}
			var storage, store int
			for _, s := range trace1 {
				if strings.HasPrefix(s.Name, "S3.") && under(s) {
					storage++
				}
				if s.Attributes["db.system.name"] == "sqlite" && under(s) {
					store++
				}
			}
			if storage == 0 || store == 0 {
				t.Errorf("under the server span: %d S3 spans, %d SQLite spans; want both\n%s", storage, store, spanTree(trace1))
			}
			t.Logf("the upload's trace:\n%s", spanTree(trace1))

			// The access log line names the server span.
			want := fmt.Sprintf(`"trace_id":"%s","span_id":"%s"`, callerTrace, server.SpanID)
			deadline := time.Now().Add(10 * time.Second)
			for !strings.Contains(gw.logText(t), want) {
				if time.Now().After(deadline) {
					t.Fatalf("no access log line with %s", want)
				}
				time.Sleep(50 * time.Millisecond) // the log is flushed every second at most; bounded by the deadline
			}
		})
	}
}

func expectStatus(t *testing.T, req *http.Request, want int) {
	t.Helper()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != want {
		t.Fatalf("%s %s: %d %s", req.Method, req.URL.Path, resp.StatusCode, b)
	}
}

func randomTraceID() (id trace.TraceID) {
	_, _ = rand.Read(id[:])
	return id
}

func randomSpanID() (id trace.SpanID) {
	_, _ = rand.Read(id[:])
	return id
}

// spanTree draws spans as the tree their parents make, children in the
// order they started, with each span's duration.
func spanTree(spans []testenv.Span) string {
	slices.SortFunc(spans, func(a, b testenv.Span) int { return a.Start.Compare(b.Start) })
	ids := map[trace.SpanID]bool{}
	for _, s := range spans {
		ids[s.SpanID] = true
	}
	var b strings.Builder
	var draw func(parent trace.SpanID, depth int)
	draw = func(parent trace.SpanID, depth int) {
		for _, s := range spans {
			isRoot := depth == 0 && !ids[s.ParentSpanID]
			if (depth == 0 && isRoot) || (depth > 0 && s.ParentSpanID == parent) {
				fmt.Fprintf(&b, "%s%s  [%s, %s]\n", strings.Repeat("  ", depth), s.Name, strings.ToLower(strings.TrimPrefix(s.Kind.String(), "SpanKind")), s.End.Sub(s.Start).Round(10*time.Microsecond))
				draw(s.SpanID, depth+1)
			}
		}
	}
	draw(trace.SpanID{}, 0)
	return b.String()
}
