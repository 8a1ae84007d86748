package e2e

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aigateway/gateway/cmd/gateway/app"
	"github.com/aigateway/gateway/configs"
	"github.com/aigateway/gateway/internal/testenv"
	"github.com/aigateway/gateway/policy/keys"
	"github.com/aigateway/gateway/policy/keys/seal"
	"github.com/jackc/pgx/v5"
	"go.uber.org/zap/zaptest"
	"gopkg.in/yaml.v3"
)

// testGateway is a whole gateway, wired by cmd/gateway/app exactly as `serve`
// wires it, behind an httptest server.
type testGateway struct {
	URL        string
	ConfigPath string
	Config     configs.Config
	rt         *app.Runtime
	app        *app.App
	srv        *httptest.Server
	// client checks every answer against the OpenAPI document.
	client *http.Client
}

// storeCase is one metadata store the black-box suites run against.
type storeCase struct {
	name      string
	configure func(t *testing.T, c *configs.Config)
}

// metadataStores lists SQLite always and PostgreSQL when `make test` started
// one (failing under CI=true when it did not).
func metadataStores() []storeCase {
	return []storeCase{
		{"sqlite", func(t *testing.T, c *configs.Config) {
			c.Metadata = configs.Metadata{Driver: "sqlite", DSN: filepath.Join(t.TempDir(), "gateway.db")}
		}},
		{"postgres", func(t *testing.T, c *configs.Config) {
			c.Metadata = configs.Metadata{Driver: "postgres", DSN: freshPostgresDB(t)}
		}},
	}
}

// freshPostgresDB creates a database for one test and drops it afterwards,
// so tests never see each other's rows.
func freshPostgresDB(t testing.TB) string {
	t.Helper()
	base := testenv.PostgresURL(t)
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, base)
	if err != nil {
		t.Fatalf("connect to test PostgreSQL: %v", err)
	}
	defer conn.Close(ctx)
	var b [6]byte
	_, _ = rand.Read(b[:])
	name := "gw_" + hex.EncodeToString(b[:])
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+name); err != nil {
		t.Fatalf("create database: %v", err)
	}
	t.Cleanup(func() {
		c, err := pgx.Connect(ctx, base)
		if err != nil {
			return
		}
		defer c.Close(ctx)
		_, _ = c.Exec(ctx, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)")
	})
	u, err := url.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	u.Path = "/" + name
	return u.String()
}

// testConfig is the embedded default pointed at temp dirs and the shipped
// catalog.
func testConfig(t *testing.T) configs.Config {
	t.Helper()
	c := configs.Default()
	dir := t.TempDir()
	c.Metadata = configs.Metadata{Driver: "sqlite", DSN: filepath.Join(dir, "gateway.db")}
	c.Storage.FS.Dir = filepath.Join(dir, "files")
	c.Catalog.Path = "../../configs/models.yaml"
	c.Log.Level = "debug"
	return c
}

// startGateway wires a gateway from cfg and serves it until the test ends.
func startGateway(t *testing.T, cfg configs.Config) *testGateway {
	t.Helper()
	if err := cfg.Validate(); err != nil {
		t.Fatalf("test config: %v", err)
	}
	path := filepath.Join(t.TempDir(), "gateway.yaml")
	data, err := yaml.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	rt, a := buildApp(t, cfg, zaptest.NewTestingWriter(t))
	srv := httptest.NewServer(a.Handler())
	t.Cleanup(func() {
		srv.Close()
		a.WaitUploads()
		_ = a.Close()
		_ = rt.Close()
	})
	return &testGateway{URL: srv.URL, ConfigPath: path, Config: cfg, rt: rt, app: a, srv: srv, client: contractClient(t, nil)}
}

// buildApp opens the runtime and builds the gateway on cfg as `serve` does;
// logs at warn level and above go to logs.
func buildApp(t testing.TB, cfg configs.Config, logs io.Writer) (*app.Runtime, *app.App) {
	t.Helper()
	cfg.Log.Level = "warn"
	rt, err := app.Open(context.Background(), cfg, app.Env{Getenv: testGetenv, Logs: logs})
	if err != nil {
		t.Fatalf("app.Open: %v", err)
	}
	a, err := app.Build(context.Background(), rt)
	if err != nil {
		_ = rt.Close()
		t.Fatalf("app.Build: %v", err)
	}
	return rt, a
}

// testSealingKey is a fixed BYOK sealing key for tests (32 zero bytes would
// do; this one is merely recognisable).
var testSealingKey = "dGVzdC1zZWFsaW5nLWtleS0zMi1ieXRlcy1sb25nISE="

func testGetenv(name string) string {
	if name == "GATEWAY_BYOK_ENCRYPTION_KEY" {
		return testSealingKey
	}
	return ""
}

// cli runs `gateway keys create` or `gateway byok set` against the test
// gateway's runtime, with the flags the suites use, and returns what the
// command prints. The commands' own flag parsing is tested in cmd/gateway.
func (g *testGateway) cli(t *testing.T, stdin string, args ...string) (string, error) {
	t.Helper()
	ctx := context.Background()
	flags := map[string]string{}
	var cmd []string
	for i := 0; i < len(args); i++ {
		switch a := args[i]; {
		case a == "--management", a == "--service":
			flags[a] = "true"
		case strings.HasPrefix(a, "--") && i+1 < len(args):
			flags[a] = args[i+1]
			i++
		default:
			cmd = append(cmd, a)
		}
	}
	switch strings.Join(cmd, " ") {
	case "keys create":
		req := keys.NewKeyRequest{Name: flags["--name"], User: flags["--user"], Role: keys.RoleStandard, Workspace: flags["--workspace"]}
		if flags["--management"] != "" {
			req.Role = keys.RoleManagement
		}
		if flags["--service"] != "" {
			req.Role = keys.RoleService
		}
		if m := flags["--models"]; m != "" {
			req.Models = strings.Split(m, ",")
		}
		token, key, err := g.rt.CreateKey(ctx, req)
		if err != nil {
			return "", err
		}
		out := fmt.Sprintf("key id: %s\nrole: %s\nuser: %s\n", key.ID, key.Role, key.UserID)
		if key.WorkspaceID != "" {
			out += "workspace: " + key.WorkspaceID + "\n"
		}
		return out + token + "\n", nil
	case "byok set":
		err := g.rt.Keys().SetProviderKey(ctx, flags["--workspace"], flags["--provider"], seal.NewSecret(strings.TrimSpace(stdin)))
		return "", err
	default:
		t.Fatalf("cli: unsupported command %q", args)
		return "", nil
	}
}

// newKey creates a key with `gateway keys create` and returns its secret.
func (g *testGateway) newKey(t *testing.T, user string, extra ...string) string {
	t.Helper()
	out, err := g.cli(t, "", append([]string{"keys", "create", "--name", "test", "--user", user}, extra...)...)
	if err != nil {
		t.Fatalf("keys create: %v", err)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	return lines[len(lines)-1]
}

// do sends a request with the key and returns the response and its body.
func (g *testGateway) do(t *testing.T, method, path, key string, body io.Reader, header http.Header) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, g.URL+path, body)
	if err != nil {
		t.Fatal(err)
	}
	for k, vs := range header {
		req.Header[k] = vs
	}
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	resp, err := g.client.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("read body: %v", err)
	}
	return resp, b
}

func TestHarnessServesAndAuthenticates(t *testing.T) {
	for _, sc := range metadataStores() {
		t.Run(sc.name, func(t *testing.T) {
			cfg := testConfig(t)
			sc.configure(t, &cfg)
			g := startGateway(t, cfg)
			ctx := context.Background()
			if _, err := g.newClient(t, g.newKey(t, "alice")).GetModel(ctx, "openai/gpt-4o"); err != nil {
				t.Fatalf("model lookup: %v", err)
			}
			_, err := g.newClient(t, "sk-gw-unknown.secret").GetModel(ctx, "openai/gpt-4o")
			apiError(t, err, http.StatusUnauthorized)
			// No key at all is raw HTTP: the client always sends one.
			resp, _ := g.do(t, "GET", "/api/v1/model/openai/gpt-4o", "", nil, nil)
			if resp.StatusCode != 401 {
				t.Fatalf("unauthenticated lookup = %d, want 401", resp.StatusCode)
			}
		})
	}
}
