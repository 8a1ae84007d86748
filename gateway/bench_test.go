package gateway

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/aigateway/gateway/catalog"
	"github.com/aigateway/gateway/configs"
	"github.com/aigateway/gateway/policy"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// oneKeyStore serves a single key, as the authentication cache would.
type oneKeyStore struct{ k policy.APIKey }

func (s oneKeyStore) EnsureUser(context.Context, string) error               { return nil }
func (s oneKeyStore) CreateKey(context.Context, policy.APIKey) error         { return nil }
func (s oneKeyStore) KeyByID(context.Context, string) (policy.APIKey, error) { return s.k, nil }

// discardResponse is a ResponseWriter that keeps nothing, so the benchmark
// measures the gateway, not a recorder.
type discardResponse struct{ h http.Header }

func (d *discardResponse) Header() http.Header         { return d.h }
func (d *discardResponse) Write(p []byte) (int, error) { return len(p), nil }
func (d *discardResponse) WriteHeader(int)             {}

// BenchmarkModelLookupChain is one GET /api/v1/model/... through the whole
// middleware chain (request id, access log, metrics, auth) with rate limiting
// off, as bench/lookup.sh drives it over HTTP.
func BenchmarkModelLookupChain(b *testing.B) {
	data, err := configs.Files.ReadFile("models.yaml")
	if err != nil {
		b.Fatal(err)
	}
	c, err := catalog.FromBytes(data)
	if err != nil {
		b.Fatal(err)
	}
	token, key, _ := policy.NewKey()
	key.UserID, key.Role = "u", policy.RoleStandard
	enc := zapcore.NewJSONEncoder(zap.NewProductionEncoderConfig())
	log := zap.New(zapcore.NewCore(enc, zapcore.AddSync(io.Discard), zap.InfoLevel))
	api := New(Options{
		Log:     log,
		Auth:    policy.NewAuthenticator(oneKeyStore{key}, 1<<62),
		Catalog: catalog.NewStatic(c, slog.New(slog.DiscardHandler)),
	})
	h := api.Handler()
	req := httptest.NewRequest("GET", "/api/v1/model/openai/gpt-4o", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	w := &discardResponse{h: http.Header{}}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		clear(w.h)
		h.ServeHTTP(w, req)
	}
}
