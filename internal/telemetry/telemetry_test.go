package telemetry

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"go.opentelemetry.io/otel"
)

func env(vars map[string]string) func(string) string {
	return func(k string) string { return vars[k] }
}

// TestOffWithoutAnEndpoint: with no endpoint in the options or the
// environment, or the SDK disabled by OTEL_SDK_DISABLED or
// OTEL_TRACES_EXPORTER=none, nothing is started.
func TestOffWithoutAnEndpoint(t *testing.T) {
	for name, o := range map[string]Options{
		"nothing":             {Getenv: env(nil)},
		"sdk disabled":        {Endpoint: "http://127.0.0.1:1", Getenv: env(map[string]string{"OTEL_SDK_DISABLED": "true"})},
		"exporter none":       {Getenv: env(map[string]string{"OTEL_TRACES_EXPORTER": "none", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:1"})},
		"sample ratio unused": {SampleRatio: 0.5, Getenv: env(nil)},
	} {
		tr, err := Start(context.Background(), o)
		if err != nil || tr != nil {
			t.Errorf("%s: Start = %v, %v; want off", name, tr, err)
		}
		if Enabled() {
			t.Errorf("%s: Enabled after an off Start", name)
		}
	}
}

// TestRefusesWhatItCannotUse: a protocol it does not speak, a ratio out of
// range and an endpoint URL of another scheme are start-up errors, not
// silent drops.
func TestRefusesWhatItCannotUse(t *testing.T) {
	for name, o := range map[string]Options{
		"protocol":      {Endpoint: "http://127.0.0.1:1", Protocol: "http/json"},
		"ratio":         {Endpoint: "http://127.0.0.1:1", SampleRatio: 1.5},
		"scheme":        {Endpoint: "ftp://collector:4318"},
		"env protocol":  {Getenv: env(map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:1", "OTEL_EXPORTER_OTLP_PROTOCOL": "thrift"})},
		"negative rate": {Endpoint: "127.0.0.1:1", SampleRatio: -0.1},
	} {
		o.Getenv = cmpGetenv(o.Getenv)
		if tr, err := Start(context.Background(), o); err == nil {
			_ = tr.Shutdown(context.Background())
			t.Errorf("%s: Start accepted %+v", name, o)
		}
	}
}

func cmpGetenv(f func(string) string) func(string) string {
	if f == nil {
		return env(nil)
	}
	return f
}

// TestExportsOverHTTP: spans reach the endpoint's /v1/traces as OTLP
// protobuf, with the configured headers, by Shutdown at the latest; the
// endpoint may come from OTEL_EXPORTER_OTLP_ENDPOINT.
func TestExportsOverHTTP(t *testing.T) {
	for _, viaEnv := range []bool{false, true} {
		var mu sync.Mutex
		var got []*http.Request
		var bodies [][]byte
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			b, _ := io.ReadAll(r.Body)
			mu.Lock()
			got, bodies = append(got, r), append(bodies, b)
			mu.Unlock()
			w.Header().Set("Content-Type", "application/x-protobuf")
		}))
		o := Options{SampleRatio: 1, Headers: map[string]string{"authorization": "Bearer t0ken"}, Getenv: env(nil)}
		if viaEnv {
			o.Getenv = env(map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": srv.URL})
		} else {
			o.Endpoint = srv.URL
		}
		tr, err := Start(context.Background(), o)
		if err != nil || tr == nil {
			t.Fatalf("Start: %v, %v", tr, err)
		}
		if !Enabled() {
			t.Fatal("not Enabled after Start")
		}
		_, span := otel.Tracer("test").Start(context.Background(), "work")
		span.End()
		if err := tr.Shutdown(context.Background()); err != nil {
			t.Fatalf("Shutdown: %v", err)
		}
		if Enabled() {
			t.Error("Enabled after Shutdown")
		}
		srv.Close()
		mu.Lock()
		if len(got) == 0 {
			t.Fatalf("env %v: nothing exported", viaEnv)
		}
		r := got[0]
		if r.URL.Path != "/v1/traces" || r.Header.Get("Content-Type") != "application/x-protobuf" || r.Header.Get("Authorization") != "Bearer t0ken" {
			t.Errorf("env %v: export %s %s, content type %q, authorization %q", viaEnv, r.Method, r.URL.Path, r.Header.Get("Content-Type"), r.Header.Get("Authorization"))
		}
		if len(bodies[0]) == 0 {
			t.Errorf("env %v: empty export", viaEnv)
		}
		mu.Unlock()
	}
}
