package app

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"testing"
	"time"

	"github.com/aigateway/gateway/configs"
	"github.com/aigateway/gateway/policy/keys"
)

// BenchmarkLookupConsole: a model lookup through the whole surface the
// process serves, with the console on and off, in the same run: the
// console must not cost the API anything it can measure (the mount is one
// prefix test per request).
func BenchmarkLookupConsole(b *testing.B) {
	for _, on := range []bool{false, true} {
		name := "off"
		if on {
			name = "on"
		}
		b.Run(name, func(b *testing.B) {
			dir := b.TempDir()
			cfg := configs.Default()
			cfg.Metadata = configs.Metadata{Driver: "sqlite", DSN: filepath.Join(dir, "gateway.db")}
			cfg.Storage.FS.Dir = filepath.Join(dir, "files")
			cfg.Catalog.Path = "../../../configs/models.yaml"
			cfg.Log.Level = "warn"
			cfg.Limits.Rate.Default = configs.Rate{Requests: 1 << 30, Per: time.Second, Burst: 1 << 30}
			cfg.Console.Enabled = on
			rt, err := Open(context.Background(), cfg, Env{Getenv: func(string) string { return "" }, Logs: io.Discard})
			if err != nil {
				b.Fatal(err)
			}
			a, err := Build(context.Background(), rt)
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { _ = a.Close(); _ = rt.Close() })
			token, _, err := rt.CreateKey(context.Background(), keys.NewKeyRequest{Name: "bench", User: "alice", Role: keys.RoleStandard})
			if err != nil {
				b.Fatal(err)
			}
			h := a.Handler()
			req := httptest.NewRequest(http.MethodGet, "/api/v1/model/openai/gpt-4o", nil)
			req.Header.Set("Authorization", "Bearer "+token)
			serve := func() int {
				rec := httptest.NewRecorder()
				h.ServeHTTP(rec, req)
				return rec.Code
			}
			if code := serve(); code != http.StatusOK {
				b.Fatalf("lookup = %d", code)
			}
			b.ReportAllocs()
			for b.Loop() {
				serve()
			}
		})
	}
}
