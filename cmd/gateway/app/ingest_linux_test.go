package app

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aigateway/gateway/configs"
	"github.com/aigateway/gateway/internal/lowprio"
	"github.com/aigateway/gateway/policy/keys"
)

// TestBuildRecordsUsageOnLoweredThreads: Build starts the threads that
// record usage reports, at lowered priority (half the Ps, at least one),
// a report goes through, and Close ends them.
func TestBuildRecordsUsageOnLoweredThreads(t *testing.T) {
	// Nice more than the process, at most 19.
	nice := min(threadNices(t)[strconv.Itoa(os.Getpid())]+lowprio.Nice, 19)
	before := threadsAtNice(t, nice)
	dir := t.TempDir()
	cfg := configs.Default()
	cfg.Metadata = configs.Metadata{Driver: "sqlite", DSN: filepath.Join(dir, "gateway.db")}
	cfg.Storage.FS.Dir = filepath.Join(dir, "files")
	cfg.Catalog.Path = "../../../configs/models.yaml"
	ctx := context.Background()
	rt, err := Open(ctx, cfg, Env{Getenv: func(string) string { return "" }, Logs: io.Discard})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	a, err := Build(ctx, rt)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := threadsAtNice(t, nice)-before, max(1, runtime.GOMAXPROCS(0)/2); got != want {
		t.Errorf("%d threads at nice %d after Build, want %d", got, nice, want)
	}

	svc, _, err := rt.CreateKey(ctx, keys.NewKeyRequest{Name: "svc", User: "alice", Role: keys.RoleService})
	if err != nil {
		t.Fatal(err)
	}
	_, std, err := rt.CreateKey(ctx, keys.NewKeyRequest{Name: "std", User: "alice", Role: keys.RoleStandard})
	if err != nil {
		t.Fatal(err)
	}
	req := httptest.NewRequest(http.MethodPost, "/api/v1/usage",
		strings.NewReader(`{"reports":[{"id":"r-1","key":"`+std.ID+`","cost":0.25}]}`))
	req.Header.Set("Authorization", "Bearer "+svc)
	req.Header.Set("Content-Type", "application/json")
	rec := httptest.NewRecorder()
	a.Handler().ServeHTTP(rec, req)
	if rec.Code != http.StatusOK || !strings.Contains(rec.Body.String(), `"accepted":1`) {
		t.Fatalf("POST /usage = %d %s", rec.Code, rec.Body)
	}

	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	// A thread ends just after its goroutine: wait for it, a while.
	for deadline := time.Now().Add(10 * time.Second); threadsAtNice(t, nice) != before; {
		if time.Now().After(deadline) {
			t.Fatalf("%d threads at nice %d after Close, want %d", threadsAtNice(t, nice), nice, before)
		}
		runtime.Gosched()
	}
}

// threadsAtNice counts this process's threads of niceness nice.
func threadsAtNice(t *testing.T, nice int) int {
	n := 0
	for _, v := range threadNices(t) {
		if v == nice {
			n++
		}
	}
	return n
}

// threadNices reads the niceness of each of this process's threads by
// id: the 19th field of its stat, counted after its name (which may hold
// spaces).
func threadNices(t *testing.T) map[string]int {
	t.Helper()
	tasks, err := os.ReadDir("/proc/self/task")
	if err != nil {
		t.Fatal(err)
	}
	nices := map[string]int{}
	for _, task := range tasks {
		stat, err := os.ReadFile(filepath.Join("/proc/self/task", task.Name(), "stat"))
		if err != nil {
			continue // the thread ended since the listing
		}
		after := stat[strings.LastIndexByte(string(stat), ')')+1:]
		if f := strings.Fields(string(after)); len(f) > 16 {
			if n, err := strconv.Atoi(f[16]); err == nil {
				nices[task.Name()] = n
			}
		}
	}
	return nices
}
