package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"

	"github.com/aigateway/gateway/internal/audit"
	"github.com/aigateway/gateway/policy/keys"
	"github.com/aigateway/gateway/policy/spend"
	"github.com/go-chi/chi/v5"
	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"
)

// fakeAuth accepts the tokens it holds.
type fakeAuth map[string]*keys.APIKey

func (f fakeAuth) Authenticate(_ context.Context, header string) (*keys.APIKey, error) {
	if header == "" {
		return nil, keys.ErrUnauthenticated
	}
	token, ok := strings.CutPrefix(header, "Bearer ")
	if k, known := f[token]; ok && known {
		return k, nil
	}
	return nil, keys.ErrInvalidKey
}

var (
	standardKey   = &keys.APIKey{ID: "k-standard", UserID: "u1", Role: keys.RoleStandard, WorkspaceID: "w1"}
	managementKey = &keys.APIKey{ID: "k-management", UserID: "u1", Role: keys.RoleManagement}
	testAuth      = fakeAuth{"standard": standardKey, "management": managementKey}
)

func newTestAPI(t testing.TB, o Options) (*API, *observer.ObservedLogs) {
	t.Helper()
	core, logs := observer.New(zap.DebugLevel)
	if o.Log == nil {
		o.Log = zap.New(core)
	}
	return mustNew(t, o), logs
}

// mustNew is New with the services a test leaves out filled in: testAuth,
// a guard that lets every key spend, and for every other service a value
// whose methods dereference nil, so a test that reaches a service it did
// not give fails at once.
func mustNew(t testing.TB, o Options) *API {
	t.Helper()
	if o.Log == nil {
		o.Log = zap.NewNop()
	}
	if o.Auth == nil {
		o.Auth = testAuth
	}
	if o.SpendGuard == nil {
		o.SpendGuard = spendAllowed{}
	}
	if o.Catalog == nil {
		o.Catalog = struct{ CatalogSource }{}
	}
	if o.Workspaces == nil {
		o.Workspaces = struct{ WorkspaceService }{}
	}
	if o.Keys == nil {
		o.Keys = struct{ KeyManager }{}
	}
	if o.ProviderKeys == nil {
		o.ProviderKeys = struct{ ProviderKeyManager }{}
	}
	if o.Spend == nil {
		o.Spend = noUsage{}
	}
	if o.Files == nil {
		o.Files = struct{ FileService }{}
	}
	if o.FileReader == nil {
		o.FileReader = struct{ FileReader }{}
	}
	if o.Uploads == nil {
		o.Uploads = struct{ UploadService }{}
	}
	if o.Audit == nil {
		o.Audit = struct{ audit.Store }{}
	}
	api, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	return api
}

// noUsage is a SpendService whose keys have spent nothing (GET /key
// shows usage); its other methods are not wired.
type noUsage struct{ SpendService }

func (noUsage) KeyUsage(context.Context, []string) (map[string]spend.Usage, error) { return nil, nil }

// spendAllowed is a SpendGuard under which no key is over anything.
type spendAllowed struct{}

func (spendAllowed) Decide(*keys.APIKey) error { return nil }

// TestNewRequiresEveryService: a dependency left out is a start-up error
// naming it, never a route that answers 503 later.
func TestNewRequiresEveryService(t *testing.T) {
	_, err := New(Options{Log: zap.NewNop(), Auth: testAuth})
	if err == nil {
		t.Fatal("New accepted Options without services")
	}
	for _, name := range []string{"Catalog", "Workspaces", "Keys", "ProviderKeys", "Spend", "SpendGuard", "Files", "FileReader", "Audit"} {
		if !strings.Contains(err.Error(), name) {
			t.Errorf("%q does not name the missing %s", err, name)
		}
	}
	if strings.Contains(err.Error(), "Auth") || strings.Contains(err.Error(), "Log,") {
		t.Errorf("%q names a dependency that was given", err)
	}
	if _, err := New(Options{}); err == nil || !strings.Contains(err.Error(), "Log") || !strings.Contains(err.Error(), "Auth") {
		t.Errorf("empty Options: %v, want Log and Auth named", err)
	}
}

type envelopeBody struct {
	Error struct {
		Code     int            `json:"code"`
		Message  string         `json:"message"`
		Metadata map[string]any `json:"metadata"`
	} `json:"error"`
}

func do(t *testing.T, h http.Handler, method, path, token string, body io.Reader) *httptest.ResponseRecorder {
	t.Helper()
	req := httptest.NewRequest(method, path, body)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

func decodeEnvelope(t *testing.T, rec *httptest.ResponseRecorder) envelopeBody {
	t.Helper()
	if ct := rec.Header().Get("Content-Type"); ct != "application/json" {
		t.Fatalf("Content-Type = %q, want application/json", ct)
	}
	var env envelopeBody
	if err := json.Unmarshal(rec.Body.Bytes(), &env); err != nil {
		t.Fatalf("body %q is not JSON: %v", rec.Body.String(), err)
	}
	if env.Error.Code != rec.Code {
		t.Fatalf("error.code = %d, want the HTTP status %d", env.Error.Code, rec.Code)
	}
	return env
}

func TestEnvelopeForEdgeErrors(t *testing.T) {
	api, _ := newTestAPI(t, Options{})
	h := api.Handler()
	tests := []struct {
		name, method, path, token string
		status                    int
		message                   string
	}{
		{"no header", "GET", "/api/v1/model/a/b", "", 401, msgMissingAuth},
		{"unknown key", "GET", "/api/v1/model/a/b", "nope", 401, msgInvalidAuth},
		{"unknown api route unauthenticated", "GET", "/api/v1/nothing-here", "", 401, msgMissingAuth},
		{"unknown api route", "GET", "/api/v1/nothing-here", "standard", 404, msgNotFound},
		{"unknown route", "GET", "/nothing", "", 404, msgNotFound},
		{"wrong method", "DELETE", "/api/v1/workspaces", "management", 405, msgMethodNotAllowed},
		{"standard key on workspaces", "POST", "/api/v1/workspaces", "standard", 403, msgManagementOnly},
		{"standard key on workspace lookup", "GET", "/api/v1/workspaces/abc", "standard", 403, msgManagementOnly},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := do(t, h, tt.method, tt.path, tt.token, nil)
			if rec.Code != tt.status {
				t.Fatalf("status = %d, want %d; body %s", rec.Code, tt.status, rec.Body)
			}
			env := decodeEnvelope(t, rec)
			if env.Error.Message != tt.message {
				t.Errorf("message = %q, want %q", env.Error.Message, tt.message)
			}
			if rec.Header().Get("X-Request-Id") == "" {
				t.Error("no X-Request-Id on the response")
			}
		})
	}
}

func TestAuthSchemes(t *testing.T) {
	api, _ := newTestAPI(t, Options{})
	h := api.Handler()
	for _, header := range []string{"Basic standard", "Bearer", "standard", "Bearer  "} {
		req := httptest.NewRequest("GET", "/api/v1/models", nil)
		req.Header.Set("Authorization", header)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != 401 {
			t.Errorf("Authorization %q: status %d, want 401", header, rec.Code)
		}
	}
}

// TestDuplicateCredentialHeadersAreRefused: a credential header sent twice
// is the 401 of a malformed key, even when both name good keys; read first
// or last, the gateway and a proxy in front could take different callers
// from it.
func TestDuplicateCredentialHeadersAreRefused(t *testing.T) {
	api, _ := newTestAPI(t, Options{})
	h := api.Handler()
	for name, header := range map[string]http.Header{
		"two Authorization": {"Authorization": {"Bearer standard", "Bearer management"}},
		"the same twice":    {"Authorization": {"Bearer standard", "Bearer standard"}},
		"two X-Api-Key":     {"X-Api-Key": {"standard", "management"}},
	} {
		req := httptest.NewRequest("GET", "/api/v1/models", nil)
		req.Header = header
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != http.StatusUnauthorized {
			t.Errorf("%s: status %d, want 401", name, rec.Code)
			continue
		}
		if env := decodeEnvelope(t, rec); env.Error.Message != msgInvalidAuth {
			t.Errorf("%s: message %q, want %q", name, env.Error.Message, msgInvalidAuth)
		}
	}
	// One of each is no duplicate: Authorization wins, as ever.
	req := httptest.NewRequest("GET", "/api/v1/models", nil)
	req.Header = http.Header{"Authorization": {"Bearer standard"}, "X-Api-Key": {"nope"}}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if rec.Code == http.StatusUnauthorized {
		t.Errorf("Authorization and X-Api-Key once each: 401 %s", rec.Body)
	}
}

func TestRequestIDHonoursSaneIncoming(t *testing.T) {
	api, _ := newTestAPI(t, Options{})
	h := api.Handler()
	for in, keep := range map[string]bool{
		"abc-123":                true,
		"trace:0af7651916cd43dd": true,
		"bad id with spaces":     false,
		strings.Repeat("a", 129): false,
		"new\nline":              false,
		"":                       false,
	} {
		req := httptest.NewRequest("GET", "/healthz", nil)
		req.Header.Set("X-Request-Id", in)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		got := rec.Header().Get("X-Request-Id")
		if keep && got != in {
			t.Errorf("incoming %q: got %q, want it kept", in, got)
		}
		if !keep && (got == in || got == "") {
			t.Errorf("incoming %q: got %q, want a fresh id", in, got)
		}
	}
}

func TestPanicBecomes500AndIsLogged(t *testing.T) {
	api, logs := newTestAPI(t, Options{})
	r := chi.NewRouter()
	r.Get("/boom", func(http.ResponseWriter, *http.Request) { panic("kaboom") })
	rec := do(t, observe(api.observation)(r), "GET", "/boom", "", nil)
	if rec.Code != 500 {
		t.Fatalf("status = %d, want 500", rec.Code)
	}
	env := decodeEnvelope(t, rec)
	if env.Error.Message != msgInternal || strings.Contains(rec.Body.String(), "kaboom") {
		t.Errorf("body %s: want the generic message, no panic text", rec.Body)
	}
	entries := logs.FilterMessage("panic serving request").All()
	if len(entries) != 1 {
		t.Fatalf("want one panic log line, got %d", len(entries))
	}
	if _, ok := entries[0].ContextMap()["stack"]; !ok {
		t.Error("panic log line has no stack")
	}
}

func TestInternalErrorsAreNotShown(t *testing.T) {
	api, logs := newTestAPI(t, Options{})
	h := api.adapt(func(http.ResponseWriter, *http.Request) error {
		return errors.New("dial tcp 10.0.0.7:5432: secret detail")
	})
	rec := httptest.NewRecorder()
	h(rec, httptest.NewRequest("GET", "/", nil))
	if rec.Code != 500 || strings.Contains(rec.Body.String(), "10.0.0.7") {
		t.Fatalf("got %d %s: want a bare 500", rec.Code, rec.Body)
	}
	if logs.FilterMessage("request failed").Len() != 1 {
		t.Error("the 500 was not logged")
	}
}

func TestAccessLogNamesRouteAndKeyNeverSecret(t *testing.T) {
	api, logs := newTestAPI(t, Options{})
	h := api.Handler()
	do(t, h, "GET", "/api/v1/workspaces/some-slug", "standard", nil)
	lines := logs.FilterMessage("request").All()
	if len(lines) != 1 {
		t.Fatalf("want one access log line, got %d", len(lines))
	}
	f := lines[0].ContextMap()
	if f["route"] != "/api/v1/workspaces/{id}" || f["key_id"] != "k-standard" || f["status"] != int64(403) {
		t.Errorf("access log fields = %v", f)
	}
	for _, e := range logs.All() {
		for _, v := range e.ContextMap() {
			if s, ok := v.(string); ok && strings.Contains(s, "Bearer") {
				t.Errorf("a log line carries the Authorization header: %v", e.ContextMap())
			}
		}
	}
}

func TestMetricsCountByRoutePattern(t *testing.T) {
	reg := prometheus.NewRegistry()
	api, _ := newTestAPI(t, Options{Registry: reg})
	h := api.Handler()
	do(t, h, "GET", "/api/v1/workspaces/a", "standard", nil)
	do(t, h, "GET", "/api/v1/workspaces/b", "standard", nil)
	rec := do(t, h, "GET", "/metrics", "", nil)
	want := `gateway_http_requests_total{method="GET",route="/api/v1/workspaces/{id}",status="403"} 2`
	if !strings.Contains(rec.Body.String(), want) {
		t.Errorf("metrics lack %s", want)
	}
}

// TestMetricsNameOddMethodsOther: a client may send any token as a method;
// each would be a new series.
func TestMetricsNameOddMethodsOther(t *testing.T) {
	reg := prometheus.NewRegistry()
	api, _ := newTestAPI(t, Options{Registry: reg})
	h := api.Handler()
	for _, m := range []string{"FROB1", "FROB2", "GET"} {
		do(t, h, m, "/healthz", "", nil)
	}
	body := do(t, h, "GET", "/metrics", "", nil).Body.String()
	for _, want := range []string{
		`gateway_http_requests_total{method="OTHER",route="unmatched",status="405"} 2`,
		`gateway_http_requests_total{method="GET",route="/healthz",status="200"} 1`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("metrics lack %s", want)
		}
	}
	if strings.Contains(body, "FROB") {
		t.Error("a client's method became a label value")
	}
}

func TestReadyzFailsWhileDraining(t *testing.T) {
	failing := false
	api, _ := newTestAPI(t, Options{ReadyChecks: map[string]ReadyCheck{
		"metadata": func(context.Context) error {
			if failing {
				return errors.New("down")
			}
			return nil
		},
		"redis": func(context.Context) error { return Degraded{Reason: "using local limits"} },
	}})
	h := api.Handler()
	if rec := do(t, h, "GET", "/readyz", "", nil); rec.Code != 200 || !strings.Contains(rec.Body.String(), "degraded") {
		t.Fatalf("readyz = %d %s, want 200 degraded", rec.Code, rec.Body)
	}
	failing = true
	if rec := do(t, h, "GET", "/readyz", "", nil); rec.Code != 503 || strings.Contains(rec.Body.String(), "down") {
		t.Fatalf("readyz with a failed check = %d %s, want 503 without the error text", rec.Code, rec.Body)
	}
	failing = false
	api.StartDraining()
	if rec := do(t, h, "GET", "/readyz", "", nil); rec.Code != 503 {
		t.Fatalf("readyz while draining = %d, want 503", rec.Code)
	}
	if rec := do(t, h, "GET", "/healthz", "", nil); rec.Code != 200 {
		t.Fatalf("healthz while draining = %d, want 200", rec.Code)
	}
}

func TestClientAddrBehindTrustedProxies(t *testing.T) {
	trusted := []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")}
	tests := []struct {
		remote, xff string
		want        string
	}{
		{"203.0.113.9:1234", "1.2.3.4", "203.0.113.9"},                       // untrusted peer: header ignored
		{"10.0.0.2:1234", "198.51.100.7", "198.51.100.7"},                    // one trusted hop
		{"10.0.0.2:1234", "6.6.6.6, 198.51.100.7, 10.0.0.3", "198.51.100.7"}, // spoofed leftmost entry ignored
		{"10.0.0.2:1234", "garbage", "10.0.0.2"},
	}
	for _, tt := range tests {
		r := httptest.NewRequest("GET", "/", nil)
		r.RemoteAddr = tt.remote
		r.Header.Set("X-Forwarded-For", tt.xff)
		if got := clientAddr(r, trusted).String(); got != tt.want {
			t.Errorf("remote %s xff %q: got %s, want %s", tt.remote, tt.xff, got, tt.want)
		}
	}
}

func TestETagMatching(t *testing.T) {
	tests := []struct {
		header string
		want   bool
	}{
		{`"abc"`, true}, {`W/"abc"`, true}, {`"x", "abc"`, true}, {`*`, true}, {`"abd"`, false}, {``, false},
	}
	for _, tt := range tests {
		if got := etagMatches(tt.header, `"abc"`); got != tt.want {
			t.Errorf("etagMatches(%q) = %v, want %v", tt.header, got, tt.want)
		}
	}
}

// TestXApiKey: the X-Api-Key header (the Anthropic SDKs' way) stands for
// Authorization when that is absent, through the same authenticator and
// with the same answers, on routes and on the not-found path.
func TestXApiKey(t *testing.T) {
	api, _ := newTestAPI(t, Options{Catalog: shippedCatalog(t)})
	h := api.Handler()
	tests := []struct {
		name          string
		authorization string // "" leaves the header out
		apiKey        string // "" leaves the header out
		// status on a keyed route (200 once in) and on an unknown
		// /api/v1 path (404 once in).
		route, unknown int
		message        string // of the 401s
	}{
		{"X-Api-Key alone", "", "standard", 200, 404, ""},
		{"unknown X-Api-Key", "", "nope", 401, 401, msgInvalidAuth},
		{"X-Api-Key holding a bearer header", "", "Bearer standard", 401, 401, msgInvalidAuth},
		{"neither", "", "", 401, 401, msgMissingAuth},
		{"Authorization wins over a good X-Api-Key", "Bearer nope", "standard", 401, 401, msgInvalidAuth},
		{"Authorization wins over a bad X-Api-Key", "Bearer standard", "nope", 200, 404, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for path, want := range map[string]int{"/api/v1/models": tt.route, "/api/v1/nothing-here": tt.unknown} {
				req := httptest.NewRequest("GET", path, nil)
				if tt.authorization != "" {
					req.Header.Set("Authorization", tt.authorization)
				}
				if tt.apiKey != "" {
					req.Header.Set("X-Api-Key", tt.apiKey)
				}
				rec := httptest.NewRecorder()
				h.ServeHTTP(rec, req)
				if rec.Code != want {
					t.Errorf("%s: status %d, want %d (%s)", path, rec.Code, want, rec.Body)
					continue
				}
				if want == 401 {
					if msg := decodeEnvelope(t, rec).Error.Message; msg != tt.message {
						t.Errorf("%s: message %q, want %q", path, msg, tt.message)
					}
				}
			}
		})
	}
}

func TestCredentials(t *testing.T) {
	tests := []struct {
		headers map[string]string
		want    string
	}{
		{map[string]string{}, ""},
		{map[string]string{"Authorization": "Bearer a"}, "Bearer a"},
		{map[string]string{"X-Api-Key": "k"}, "Bearer k"},
		{map[string]string{"Authorization": "Bearer a", "X-Api-Key": "k"}, "Bearer a"},
		{map[string]string{"Authorization": "", "X-Api-Key": "k"}, "Bearer k"},
		{map[string]string{"x-api-key": "k"}, "Bearer k"}, // header names are case-insensitive
	}
	for _, tt := range tests {
		r := httptest.NewRequest("GET", "/", nil)
		for k, v := range tt.headers {
			r.Header.Set(k, v)
		}
		if got := credentials(r); got != tt.want {
			t.Errorf("credentials(%v) = %q, want %q", tt.headers, got, tt.want)
		}
	}
}

// TestQuerySemicolonIsRefused: Go drops a query pair holding a raw ';', so
// "?limit=1;offset=2" would be answered as if neither were given; it is a
// 400 naming the query instead. An escaped semicolon is a value's own.
func TestQuerySemicolonIsRefused(t *testing.T) {
	api, _ := newTestAPI(t, Options{})
	h := api.Handler()
	for _, target := range []string{"/api/v1/models?limit=1;offset=2", "/api/v1/workspaces?zzz=1;limit=1", "/api/v1/key?;"} {
		rec := do(t, h, "GET", target, "management", nil)
		if rec.Code != http.StatusBadRequest {
			t.Errorf("%s: status %d, want 400", target, rec.Code)
			continue
		}
		env := decodeEnvelope(t, rec)
		if fields, _ := env.Error.Metadata["fields"].(map[string]any); fields["query"] == nil {
			t.Errorf("%s: metadata %v does not name the query", target, env.Error.Metadata)
		}
	}
	if rec := do(t, h, "GET", "/api/v1/models?x=1;y", "", nil); rec.Code != http.StatusUnauthorized {
		t.Errorf("without a key: status %d, want 401 first", rec.Code)
	}
}
