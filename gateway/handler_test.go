package gateway

import (
	"net/http"
	"strings"
	"testing"

	"github.com/aigateway/gateway/policy/keys"
)

// opaqueWriter wraps a writer without Unwrap, as a third-party middleware
// might: nothing below it can reach the writers above it.
type opaqueWriter struct{ w http.ResponseWriter }

func (o opaqueWriter) Header() http.Header         { return o.w.Header() }
func (o opaqueWriter) Write(p []byte) (int, error) { return o.w.Write(p) }
func (o opaqueWriter) WriteHeader(code int)        { o.w.WriteHeader(code) }

func hideWriter(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		next.ServeHTTP(opaqueWriter{w}, r)
	})
}

// The key and the body clock travel in the request's state, not on the
// writer: a wrapper between the middleware and the handler loses neither.
func TestKeyAndBodyClockSurviveAWrappedWriter(t *testing.T) {
	api, _ := newTestAPI(t, Options{})
	var got *keys.APIKey
	var clock *bodyClock
	h := api.keyed(func(w http.ResponseWriter, r *http.Request, caller *keys.APIKey) error {
		got, clock = caller, bodyClockOf(r)
		w.WriteHeader(http.StatusNoContent)
		return nil
	})
	chain := observe(api.observation)(guardBody(api.bodyTimeout, api.lingering)(requireKey(api.authn, api.log)(hideWriter(h))))
	rec := do(t, chain, "POST", "/api/v1/x", "standard", strings.NewReader(`{}`))
	if rec.Code != http.StatusNoContent {
		t.Fatalf("status = %d, want 204: %s", rec.Code, rec.Body)
	}
	if got != standardKey {
		t.Errorf("handler got key %v, want the standard key", got)
	}
	if clock == nil {
		t.Error("handler found no body clock")
	}
}

// A handler that acts for a caller, reached without a key (mounted outside
// requireKey, or driven without observe), is a 401 in the envelope: it is
// never called with a nil key.
func TestKeyedWithoutKeyIsRefused(t *testing.T) {
	api, _ := newTestAPI(t, Options{})
	called := false
	h := api.keyed(func(http.ResponseWriter, *http.Request, *keys.APIKey) error {
		called = true
		return nil
	})
	for name, chain := range map[string]http.Handler{
		"no requireKey":  observe(api.observation)(hideWriter(h)),
		"no observe":     requireKey(api.authn, api.log)(h),
		"nothing at all": h,
	} {
		t.Run(name, func(t *testing.T) {
			rec := do(t, chain, "GET", "/api/v1/x", "standard", nil)
			if rec.Code != http.StatusUnauthorized {
				t.Fatalf("status = %d, want 401", rec.Code)
			}
			decodeEnvelope(t, rec)
			if called {
				t.Error("handler called without a key")
			}
		})
	}
}
