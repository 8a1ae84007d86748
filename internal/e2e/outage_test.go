package e2e

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/aigateway/gateway/configs"
	"github.com/aigateway/gateway/internal/testenv"
)

// TestMetadataStoreOutage: with PostgreSQL out of reach, every route that
// needs it answers 503 with Retry-After in the envelope (never a 500), and
// an upload whose commit could not be written leaves no bytes behind.
func TestMetadataStoreOutage(t *testing.T) {
	testenv.PostgresURL(t)
	direct := fileTestConfig(t)
	direct.Metadata = configs.Metadata{Driver: "postgres", DSN: freshPostgresDB(t)}
	dsn, err := url.Parse(direct.Metadata.DSN)
	if err != nil {
		t.Fatal(err)
	}
	proxy := startSlowProxy(t, dsn.Host, 0)
	dsn.Host = proxy.addr()
	cfg := direct
	cfg.Metadata.DSN = dsn.String()

	// The gateway reaches PostgreSQL through the proxy; the inspector
	// directly, so it can still look after the proxy is gone.
	in := openFileInspector(t, cfg)
	e := &fileEnv{fileInspector: in, g: startGateway(t, cfg)}
	in.openDB(t, direct)
	mgmt := e.g.newKey(t, "alice", "--management")
	std, _ := e.standardKey(t, "alice")
	// Warm the authentication cache, so the outage is met by the routes
	// themselves, not by the key lookup (which has answered 503 already).
	for _, key := range []string{mgmt, std} {
		if resp, body := e.g.do(t, "GET", "/api/v1/models", key, nil, nil); resp.StatusCode != 200 {
			t.Fatalf("lookup before the outage: %d %s", resp.StatusCode, body)
		}
	}
	before := e.state(t)

	proxy.close()
	cut := time.Now()
	json := http.Header{"Content-Type": {"application/json"}}
	checks := []struct {
		name string
		send func() (*http.Response, []byte)
	}{
		{"create workspace", func() (*http.Response, []byte) {
			return e.g.do(t, "POST", "/api/v1/workspaces", mgmt, strings.NewReader(`{"name":"During","slug":"during"}`), json)
		}},
		{"list workspaces", func() (*http.Response, []byte) { return e.g.do(t, "GET", "/api/v1/workspaces", mgmt, nil, nil) }},
		{"get workspace", func() (*http.Response, []byte) { return e.g.do(t, "GET", "/api/v1/workspaces/default", mgmt, nil, nil) }},
		{"upload", func() (*http.Response, []byte) {
			return e.upload(t, std, "", nil, "notes.txt", []byte("hello during an outage"))
		}},
	}
	for _, c := range checks {
		resp, body := c.send()
		if resp.StatusCode != http.StatusServiceUnavailable {
			t.Errorf("%s: %d %s, want 503", c.name, resp.StatusCode, body)
			continue
		}
		if resp.Header.Get("Retry-After") == "" {
			t.Errorf("%s: 503 without Retry-After", c.name)
		}
		fileWantEnvelope(t, body, http.StatusServiceUnavailable, "Service temporarily unavailable")
	}
	if time.Since(cut) > 8*time.Second {
		t.Fatalf("the checks took %v: the authentication cache may have expired under them", time.Since(cut))
	}
	e.awaitNothingLeft(t, before, 10*time.Second)
}
