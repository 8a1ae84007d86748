package app

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/aigateway/gateway/backends/providers"
	"github.com/aigateway/gateway/backends/providers/providertest"
	"github.com/aigateway/gateway/configs"
	"github.com/aigateway/gateway/files"
	"github.com/aigateway/gateway/policy/keys"
	"github.com/aigateway/gateway/policy/keys/seal"
	"go.uber.org/zap"
)

// BenchmarkPassthrough is GET /api/v1/files?provider=openai&workspace_id=W
// through the whole surface (auth, limits, spend guard, the workspace, the
// stored key, the upstream call, the answer), from 64 callers at once,
// against the OpenAI stand-in in this process holding 20 files:
//
//   - gateway: the route, served by the App's handler;
//   - upstream: the same page asked of the stand-in by a providers client
//     directly, the baseline of the same run: what the call costs without
//     the gateway around it (the stand-in's own work is in both).
//
// cpu-ns/op is the CPU the process spent per call; gateway minus upstream is
// the gateway's own share. bench/passthrough.sh measures the same call on
// the real binary, with the stand-in in a process of its own.
func BenchmarkPassthrough(b *testing.B) {
	const nFiles = 20
	stand := providertest.NewOpenAI(b)
	stand.DiscardRequests()
	for i := range nFiles {
		stand.Seed(providertest.SeedFile{Filename: fmt.Sprintf("f%03d.jsonl", i), Size: 10,
			Open: func() io.Reader { return strings.NewReader("0123456789") }})
	}

	dir := b.TempDir()
	cfg := configs.Default()
	cfg.Metadata = configs.Metadata{Driver: "sqlite", DSN: filepath.Join(dir, "gateway.db")}
	cfg.Storage.FS.Dir = filepath.Join(dir, "files")
	cfg.Catalog.Path = "../../../configs/models.yaml"
	cfg.Sweeper.Interval = 0
	cfg.Providers.OpenAI.BaseURL = stand.BaseURL
	cfg.Limits.Rate.Default = configs.Rate{Requests: 1 << 30, Per: time.Second, Burst: 1 << 30}
	cfg.Console.Enabled = false
	rt, err := Open(context.Background(), cfg, Env{Getenv: func(string) string { return "" }, Logs: io.Discard})
	if err != nil {
		b.Fatal(err)
	}
	a, err := Build(context.Background(), rt)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = a.Close(); _ = rt.Close() })
	token, _, err := rt.CreateKey(context.Background(), keys.NewKeyRequest{Name: "bench", User: "alice", Role: keys.RoleManagement})
	if err != nil {
		b.Fatal(err)
	}
	h := a.Handler()
	call := func(method, target, body string) *httptest.ResponseRecorder {
		req := httptest.NewRequest(method, target, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+token)
		if body != "" {
			req.Header.Set("Content-Type", "application/json")
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		return rec
	}
	rec := call(http.MethodPost, "/api/v1/workspaces", `{"name":"Passthrough","slug":"passthrough"}`)
	ws, ok := strings.CutPrefix(rec.Body.String(), `{"data":{"id":"`)
	if rec.Code != http.StatusCreated || !ok {
		b.Fatalf("create workspace = %d %s", rec.Code, rec.Body)
	}
	ws, _, _ = strings.Cut(ws, `"`)
	if rec := call(http.MethodPost, "/api/v1/byok", fmt.Sprintf(`{"provider":"openai","key":%q,"workspace_id":%q}`, stand.Key, ws)); rec.Code != http.StatusCreated {
		b.Fatalf("store provider key = %d %s", rec.Code, rec.Body)
	}
	target := "/api/v1/files?provider=openai&workspace_id=" + ws
	if rec := call(http.MethodGet, target, ""); rec.Code != http.StatusOK || strings.Count(rec.Body.String(), `"id":"file-`) != nFiles {
		b.Fatalf("list = %d %s", rec.Code, rec.Body)
	}

	b.Run("gateway", func(b *testing.B) {
		req := httptest.NewRequest(http.MethodGet, target, nil)
		req.Header.Set("Authorization", "Bearer "+token)
		measureParallel(b, func() error {
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			if rec.Code != http.StatusOK {
				return fmt.Errorf("list = %d %s", rec.Code, rec.Body)
			}
			return nil
		})
	})
	b.Run("upstream", func(b *testing.B) {
		p, err := providers.New(providers.ProviderOpenAI, providers.Options{BaseURL: stand.BaseURL}, zap.NewNop())
		if err != nil {
			b.Fatal(err)
		}
		key := seal.NewSecret(stand.Key)
		q := files.ProviderListQuery{Limit: files.DefaultListLimit}
		measureParallel(b, func() error {
			page, err := p.List(context.Background(), key, q)
			if err == nil && len(page.Files) != nFiles {
				err = fmt.Errorf("listed %d files, want %d", len(page.Files), nFiles)
			}
			return err
		})
	})
}

// measureParallel runs call b.N times from 64 callers at once and reports
// allocations and the CPU the process spent per call (cpu-ns/op).
func measureParallel(b *testing.B, call func() error) {
	b.ReportAllocs()
	start, ok := processCPU()
	b.SetParallelism(max(1, 64/runtime.GOMAXPROCS(0)))
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if err := call(); err != nil {
				b.Error(err)
				return
			}
		}
	})
	if end, ok2 := processCPU(); ok && ok2 && b.N > 0 {
		b.ReportMetric(float64(end-start)/float64(b.N), "cpu-ns/op")
	}
}
