package console_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/aigateway/gateway/client"
	"github.com/aigateway/gateway/cmd/gateway/app"
	"github.com/aigateway/gateway/configs"
	"github.com/aigateway/gateway/policy/keys"
	"go.uber.org/zap/zaptest"
)

// gateway is a whole gateway wired by cmd/gateway/app, as `serve` wires it,
// behind an httptest server: the console and the API it calls.
type gateway struct {
	URL string
	rt  *app.Runtime
	app *app.App
	// Management is a management key of user "u1".
	Management string
}

// testConfig is the embedded default on temp dirs, with downloads allowed
// (the console's download goes through the API, which refuses them by
// default).
func testConfig(t testing.TB) configs.Config {
	c := configs.Default()
	dir := t.TempDir()
	c.Metadata = configs.Metadata{Driver: "sqlite", DSN: filepath.Join(dir, "gateway.db")}
	c.Storage.FS.Dir = filepath.Join(dir, "files")
	c.Catalog.Path = "../../configs/models.yaml"
	c.Files.Downloadable = true
	c.Log.Level = "warn"
	c.Sweeper.Interval = 0
	return c
}

// testSealingKey is the gateway's sealing key in tests (32 bytes, base64).
const testSealingKey = "dGVzdC1zZWFsaW5nLWtleS0zMi1ieXRlcy1sb25nISE="

func testGetenv(name string) string {
	if name == "GATEWAY_BYOK_ENCRYPTION_KEY" {
		return testSealingKey
	}
	return ""
}

// startGateway builds the gateway on cfg; when withKey, a management key
// is made first (so no first-run link is offered).
func startGateway(t testing.TB, cfg configs.Config, withKey bool) *gateway {
	t.Helper()
	rt, err := app.Open(context.Background(), cfg, app.Env{Getenv: testGetenv, Logs: zaptest.NewTestingWriter(t)})
	if err != nil {
		t.Fatalf("app.Open: %v", err)
	}
	g := &gateway{rt: rt}
	if withKey {
		g.Management = g.createKey(t, keys.RoleManagement)
	}
	a, err := app.Build(context.Background(), rt)
	if err != nil {
		_ = rt.Close()
		t.Fatalf("app.Build: %v", err)
	}
	g.app = a
	srv := httptest.NewServer(a.Handler())
	g.URL = srv.URL
	t.Cleanup(func() {
		srv.Close()
		a.WaitUploads()
		_ = a.Close()
		_ = rt.Close()
	})
	return g
}

// createKey makes a key of user u1 as the CLI does and returns its secret.
func (g *gateway) createKey(t testing.TB, role keys.Role) string {
	t.Helper()
	token, _, err := g.rt.CreateKey(context.Background(), keys.NewKeyRequest{Name: "test " + string(role), User: "u1", Role: role})
	if err != nil {
		t.Fatal(err)
	}
	return token
}

// api is a client of the API with key.
func (g *gateway) api(t testing.TB, key string) *client.Client {
	t.Helper()
	c, err := client.New(g.URL, key, client.WithRetry(client.Retry{MaxAttempts: 1}))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// visitor is an HTTP client that keeps cookies and does not follow
// redirects, so each answer can be checked.
type visitor struct {
	t    testing.TB
	base string
	hc   *http.Client
}

func (g *gateway) browser(t testing.TB) *visitor { return newVisitor(t, g.URL) }

// newVisitor is a browser of the console at base.
func newVisitor(t testing.TB, base string) *visitor {
	jar, _ := cookiejar.New(nil)
	return &visitor{t: t, base: base, hc: &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error {
		return http.ErrUseLastResponse
	}}}
}

// answer is an HTTP answer, its body read.
type answer struct {
	*http.Response
	Body string
}

func (b *visitor) do(req *http.Request) answer {
	b.t.Helper()
	resp, err := b.hc.Do(req)
	if err != nil {
		b.t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return answer{resp, string(body)}
}

func (b *visitor) get(path string) answer {
	b.t.Helper()
	req, _ := http.NewRequest(http.MethodGet, b.base+path, nil)
	return b.do(req)
}

// post sends a form as the console's own pages do (same origin).
func (b *visitor) post(path string, form url.Values) answer {
	b.t.Helper()
	req, _ := http.NewRequest(http.MethodPost, b.base+path, strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", b.base)
	req.Header.Set("Sec-Fetch-Site", "same-origin")
	return b.do(req)
}

var csrfField = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

// csrf is the form token of the page at path.
func (b *visitor) csrf(path string) string {
	b.t.Helper()
	p := b.get(path)
	m := csrfField.FindStringSubmatch(p.Body)
	if m == nil {
		b.t.Fatalf("GET %s (%d): no csrf field in the page", path, p.StatusCode)
	}
	return m[1]
}

// signIn signs in with key and fails the test unless it worked.
func (b *visitor) signIn(key string) {
	b.t.Helper()
	p := b.post("/console/sign-in", url.Values{"csrf": {b.csrf("/console/sign-in")}, "key": {key}})
	if p.StatusCode != http.StatusSeeOther || p.Header.Get("Location") != "/console/" {
		b.t.Fatalf("sign-in = %d %s, want 303 to /console/\n%s", p.StatusCode, p.Header.Get("Location"), p.Body)
	}
}

// decodeJSONReader reads a JSON answer and closes it.
func decodeJSONReader(t testing.TB, resp *http.Response, v any) {
	t.Helper()
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
		t.Fatal(err)
	}
}

func mustURL(t testing.TB, s string) *url.URL {
	u, err := url.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

// decodeJSON reads a JSON answer.
func decodeJSON(t testing.TB, s string, v any) {
	t.Helper()
	if err := json.Unmarshal([]byte(s), v); err != nil {
		t.Fatalf("decode %q: %v", s, err)
	}
}
