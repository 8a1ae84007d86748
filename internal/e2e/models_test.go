package e2e

// Black-box tests of the model catalog API (GET /api/v1/model/{author}/{slug}
// and GET /api/v1/models) through the whole gateway: real HTTP, the real
// middleware chain, keys made by `gateway keys create`, and a catalog file
// under testdata/catalog whose every entry exercises one rule of the API
// contract or of DESIGN.md §2 and §5. Assertions read the raw JSON (key
// presence, null, verbatim numbers and prices), never decoded structs, so an
// optional field that leaks as null or a price re-printed as a float fails.

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aigateway/gateway/catalog"
	"github.com/aigateway/gateway/configs"
	"gopkg.in/yaml.v3"
)

// modelTestCatalog is the catalog of these tests; see the comments in it.
const modelTestCatalog = "testdata/catalog/models.yaml"

// brokenTestCatalog breaks several rules at once.
const brokenTestCatalog = "testdata/catalog/broken.yaml"

// modelTestIDs is every entry of modelTestCatalog, sorted by id: what
// GET /api/v1/models must list (own variant and ~ entries included; listed
// variants, slug aliases and the latest map not).
var modelTestIDs = []string{
	"openai/gpt-4",
	"openai/gpt-4:free",
	"testco/alpha",
	"testco/plain",
	"testco/thinker",
	"voiceco/speak",
	"~testco/alpha-latest",
}

// gatewayOnlyKeys are keys of the catalog file that no response may carry.
var gatewayOnlyKeys = []string{"aliases", "variants", "latest"}

// startCatalogGateway serves the catalog file at path.
func startCatalogGateway(t *testing.T, path string) *testGateway {
	t.Helper()
	cfg := modelTestConfig(t)
	cfg.Catalog.Path = path
	return startGateway(t, cfg)
}

// modelTestConfig is testConfig with a request rate no test here reaches:
// these tests are about the catalog, and some send hundreds of lookups with
// one key.
func modelTestConfig(t *testing.T) configs.Config {
	t.Helper()
	cfg := testConfig(t)
	cfg.Limits.Rate.Default = configs.Rate{Requests: 1_000_000, Per: time.Minute, Burst: 1_000_000}
	return cfg
}

// copyCatalog copies the test catalog into a fresh directory (which the
// gateway then watches alone) and returns the copy's path and content.
func copyCatalog(t *testing.T) (string, []byte) {
	t.Helper()
	data, err := os.ReadFile(modelTestCatalog)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "models.yaml")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return path, data
}

// writeAtomically replaces path by a rename, as editors and deploy tools do:
// a reader sees the old file or the new one, never a partial one.
func writeAtomically(t *testing.T, path string, data []byte) {
	t.Helper()
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

// writeInPlace truncates and rewrites path, as `cat > file` does.
func writeInPlace(t *testing.T, path string, data []byte) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_TRUNC, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write(data); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

// newcomerEntry is appended to the models list (last in the test catalog)
// to make a second catalog version with one more model.
const newcomerEntry = `
  - id: testco/newcomer
    canonical_slug: testco/newcomer
    name: "Testco: Newcomer"
    created: 1767225700
    context_length: 1000
    pricing: {prompt: "0.000001", completion: "0.000002"}
    architecture: {modality: text->text, input_modalities: [text], output_modalities: [text]}
    top_provider: {is_moderated: false}
    per_request_limits: null
    supported_parameters: []
    default_parameters: null
    supported_voices: null
`

// withNewcomer returns base plus a model named testco/<slug>.
func withNewcomer(base []byte, slug string) []byte {
	entry := strings.ReplaceAll(newcomerEntry, "testco/newcomer", "testco/"+slug)
	return append(bytes.Clone(base), entry...)
}

// renamedAlpha returns base with testco/alpha's display name changed, so
// that its body, its aliases' and variants' bodies and the list differ.
func renamedAlpha(t *testing.T, base []byte, name string) []byte {
	t.Helper()
	const line = "    name: \"Testco: Alpha\"\n"
	if bytes.Count(base, []byte(line)) != 1 {
		t.Fatalf("test catalog: want exactly one %q line", line)
	}
	return bytes.Replace(base, []byte(line), []byte("    name: \""+name+"\"\n"), 1)
}

// lookup GETs /api/v1/model/<id> (id written as the request path carries it).
func (g *testGateway) lookup(t *testing.T, key, id string, header http.Header) (*http.Response, []byte) {
	t.Helper()
	return g.do(t, "GET", "/api/v1/model/"+id, key, nil, header)
}

// rawGet sends target as the request-target byte for byte, without a client
// parsing or re-escaping it (http.NewRequest refuses "%zz" and normalises
// other escapes), and returns the response and its body.
func (g *testGateway) rawGet(t *testing.T, target, key string) (*http.Response, []byte) {
	t.Helper()
	conn, err := net.Dial("tcp", g.srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
	req := "GET " + target + " HTTP/1.1\r\nHost: gateway.test\r\nConnection: close\r\n"
	if key != "" {
		req += "Authorization: Bearer " + key + "\r\n"
	}
	if _, err := io.WriteString(conn, req+"\r\n"); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("GET %s: %v", target, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("GET %s: read body: %v", target, err)
	}
	return resp, body
}

// rawObject decodes raw as a JSON object keeping every value raw.
func rawObject(t *testing.T, raw []byte) map[string]json.RawMessage {
	t.Helper()
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatalf("not a JSON object: %v: %.300s", err, raw)
	}
	if m == nil {
		t.Fatalf("want an object, got %s", raw)
	}
	return m
}

// modelData returns the raw "data" object of a 200 model body, after
// checking that it is the body's only key.
func modelData(t *testing.T, body []byte) map[string]json.RawMessage {
	t.Helper()
	top := rawObject(t, body)
	if len(top) != 1 || top["data"] == nil {
		t.Fatalf("body keys = %v, want only data", rawKeys(top))
	}
	return rawObject(t, top["data"])
}

func rawKeys(m map[string]json.RawMessage) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}

// rawString decodes a raw JSON string (failing on anything else).
func rawString(t *testing.T, raw json.RawMessage) string {
	t.Helper()
	var s string
	if len(raw) == 0 || raw[0] != '"' || json.Unmarshal(raw, &s) != nil {
		t.Fatalf("want a JSON string, got %s", raw)
	}
	return s
}

// wantKeys checks that obj has exactly the keys want.
func wantKeys(t *testing.T, what string, obj map[string]json.RawMessage, want ...string) {
	t.Helper()
	slices.Sort(want)
	if got := rawKeys(obj); !slices.Equal(got, want) {
		t.Errorf("%s keys = %v, want %v", what, got, want)
	}
}

// wantRaw checks obj[key] byte for byte (so null vs absent, 1767225600 vs
// 1.7672256e+09 and "0.0000030" vs "0.000003" all tell apart).
func wantRaw(t *testing.T, what string, obj map[string]json.RawMessage, key, want string) {
	t.Helper()
	got, ok := obj[key]
	if !ok {
		t.Errorf("%s.%s is absent, want %s", what, key, want)
		return
	}
	if string(got) != want {
		t.Errorf("%s.%s = %s, want %s", what, key, got, want)
	}
}

// noGatewayOnlyKeys fails when any object anywhere in body has a key that
// only the catalog file may hold.
func noGatewayOnlyKeys(t *testing.T, what string, body []byte) {
	t.Helper()
	var v any
	if err := json.Unmarshal(body, &v); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	var walk func(path string, v any)
	walk = func(path string, v any) {
		switch v := v.(type) {
		case map[string]any:
			for k, c := range v {
				if slices.Contains(gatewayOnlyKeys, k) {
					t.Errorf("%s: gateway-only key %s.%s in the response", what, path, k)
				}
				walk(path+"."+k, c)
			}
		case []any:
			for i, c := range v {
				walk(fmt.Sprintf("%s[%d]", path, i), c)
			}
		}
	}
	walk("", v)
}

// wantModelEnvelope checks an error answer: the status, the JSON envelope of the
// spec with error.code repeating it, and a request id.
func wantModelEnvelope(t *testing.T, what string, resp *http.Response, body []byte, status int) {
	t.Helper()
	if resp.StatusCode != status {
		t.Fatalf("%s: status %d, want %d; body %.300s", what, resp.StatusCode, status, body)
	}
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		t.Errorf("%s: Content-Type %q, want application/json", what, ct)
	}
	if resp.Header.Get("X-Request-Id") == "" {
		t.Errorf("%s: no X-Request-Id", what)
	}
	top := rawObject(t, body)
	for k := range top {
		if k != "error" && k != "service_metadata" && k != "user_id" {
			t.Errorf("%s: unexpected key %q in the error body", what, k)
		}
	}
	e := rawObject(t, top["error"])
	wantRaw(t, what+": error", e, "code", strconv.Itoa(status))
	if msg := rawString(t, e["message"]); msg == "" {
		t.Errorf("%s: empty error.message", what)
	}
	if md, ok := e["metadata"]; ok && md[0] != '{' && string(md) != "null" {
		t.Errorf("%s: error.metadata = %s, want an object or null", what, md)
	}
}

// TestModelLookupResolution walks every resolution rule of DESIGN.md §2:
// exact id, own variant entry, variant listed on the base, variant not
// offered, slug aliases (with variants), tilde aliases from the latest map
// and as entries of their own, percent-encoded path values.
// TestModelLookupResolution checks that lookups reach the catalog's
// resolution through the HTTP edge: path segments decoded once (encoded
// colons and tildes), one case of each kind of name, and the wire shape of
// what comes back. Every resolution rule is tested in catalog (TestResolve).
func TestModelLookupResolution(t *testing.T) {
	g := startCatalogGateway(t, modelTestCatalog)
	key := g.newKey(t, "alice")

	const (
		alphaDetails = "/api/v1/models/testco/alpha/endpoints"
		gpt4Details  = "/api/v1/models/openai/gpt-4/endpoints"
	)
	type target struct{ slug, name string }
	tests := []struct {
		name    string
		path    string // after /api/v1/model/, as sent
		status  int
		id      string // data.id
		details string // data.links.details
		prompt  string // data.pricing.prompt
		context string // raw data.context_length
		alias   *target
		sameAs  string // the body must be byte-equal to this path's body
	}{
		{name: "exact id", path: "testco/alpha", status: 200, id: "testco/alpha", details: alphaDetails, prompt: "0.0000030", context: "200000"},
		{name: "exact id of a model with an explicit links.details", path: "openai/gpt-4", status: 200, id: "openai/gpt-4", details: gpt4Details, prompt: "0.00003", context: "8191"},

		{name: "own :free entry wins over the listed variant", path: "openai/gpt-4:free", status: 200, id: "openai/gpt-4:free", details: gpt4Details, prompt: "0", context: "4096"},
		{name: "own :free entry, colon encoded", path: "openai/gpt-4%3Afree", status: 200, sameAs: "openai/gpt-4:free", id: "openai/gpt-4:free", details: gpt4Details, prompt: "0", context: "4096"},
		{name: "own :free entry, colon encoded in lower case", path: "openai/gpt-4%3afree", status: 200, sameAs: "openai/gpt-4:free", id: "openai/gpt-4:free", details: gpt4Details, prompt: "0", context: "4096"},

		{name: "variant listed on the base", path: "testco/alpha:nitro", status: 200, id: "testco/alpha:nitro", details: alphaDetails, prompt: "0.0000030", context: "200000"},
		{name: "listed variant, colon encoded", path: "testco/alpha%3Anitro", status: 200, sameAs: "testco/alpha:nitro", id: "testco/alpha:nitro", details: alphaDetails, prompt: "0.0000030", context: "200000"},

		{name: "variant not offered", path: "testco/alpha:free", status: 404},

		{name: "slug alias", path: "testco/alpha-20260101", status: 200, sameAs: "testco/alpha", id: "testco/alpha", details: alphaDetails, prompt: "0.0000030", context: "200000"},
		{name: "slug alias with a listed variant", path: "testco/alpha-classic:nitro", status: 200, sameAs: "testco/alpha:nitro", id: "testco/alpha:nitro", details: alphaDetails, prompt: "0.0000030", context: "200000"},

		{name: "tilde alias of the latest map", path: "~openai/gpt-latest", status: 200, id: "openai/gpt-4", details: gpt4Details, prompt: "0.00003", context: "8191",
			alias: &target{"openai/gpt-4", "OpenAI: GPT-4"}},
		{name: "tilde alias, tilde encoded", path: "%7Eopenai/gpt-latest", status: 200, sameAs: "~openai/gpt-latest", id: "openai/gpt-4", details: gpt4Details, prompt: "0.00003", context: "8191",
			alias: &target{"openai/gpt-4", "OpenAI: GPT-4"}},
		{name: "tilde alias, tilde encoded in lower case", path: "%7eopenai/gpt-latest", status: 200, sameAs: "~openai/gpt-latest", id: "openai/gpt-4", details: gpt4Details, prompt: "0.00003", context: "8191",
			alias: &target{"openai/gpt-4", "OpenAI: GPT-4"}},
		{name: "tilde alias of a speech model", path: "~voiceco/speak-latest", status: 200, id: "voiceco/speak", details: "/api/v1/models/voiceco/speak/endpoints", prompt: "0.0000006", context: "2000",
			alias: &target{"voiceco/speak", "VoiceCo: Speak"}},
		{name: "tilde entry of its own", path: "~testco/alpha-latest", status: 200, id: "~testco/alpha-latest", details: "/api/v1/models/~testco/alpha-latest/endpoints", prompt: "0.000003", context: "200000",
			alias: &target{"testco/alpha", "Testco: Alpha"}},
		{name: "tilde entry of its own, tilde encoded", path: "%7Etestco/alpha-latest", status: 200, sameAs: "~testco/alpha-latest", id: "~testco/alpha-latest", details: "/api/v1/models/~testco/alpha-latest/endpoints", prompt: "0.000003", context: "200000",
			alias: &target{"testco/alpha", "Testco: Alpha"}},
		{name: "every character encoded", path: "%74%65%73%74%63%6F/%61%6C%70%68%61", status: 200, sameAs: "testco/alpha", id: "testco/alpha", details: alphaDetails, prompt: "0.0000030", context: "200000"},

		{name: "unknown slug", path: "testco/nothing", status: 404},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			resp, body := g.rawGet(t, "/api/v1/model/"+strings.ReplaceAll(tc.path, " ", "%20"), key)
			if tc.status != 200 {
				wantModelEnvelope(t, tc.path, resp, body, tc.status)
				return
			}
			if resp.StatusCode != 200 {
				t.Fatalf("GET %s = %d %.300s", tc.path, resp.StatusCode, body)
			}
			if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
				t.Errorf("Content-Type %q", ct)
			}
			noGatewayOnlyKeys(t, tc.path, body)
			d := modelData(t, body)
			if got := rawString(t, d["id"]); got != tc.id {
				t.Errorf("data.id = %q, want %q", got, tc.id)
			}
			links := rawObject(t, d["links"])
			wantKeys(t, "links", links, "details")
			if got := rawString(t, links["details"]); got != tc.details {
				t.Errorf("links.details = %q, want %q", got, tc.details)
			}
			wantRaw(t, "data.pricing", rawObject(t, d["pricing"]), "prompt", strconv.Quote(tc.prompt))
			wantRaw(t, "data", d, "context_length", tc.context)
			if tc.alias == nil {
				if at, ok := d["alias_target"]; ok {
					t.Errorf("alias_target = %s, want it absent", at)
				}
			} else {
				at, ok := d["alias_target"]
				if !ok {
					t.Fatalf("alias_target is absent")
				}
				o := rawObject(t, at)
				wantKeys(t, "alias_target", o, "slug", "name")
				if s, n := rawString(t, o["slug"]), rawString(t, o["name"]); s != tc.alias.slug || n != tc.alias.name {
					t.Errorf("alias_target = {%q, %q}, want {%q, %q}", s, n, tc.alias.slug, tc.alias.name)
				}
			}
			if tc.sameAs != "" {
				r2, b2 := g.lookup(t, key, tc.sameAs, nil)
				if r2.StatusCode != 200 {
					t.Fatalf("GET %s = %d", tc.sameAs, r2.StatusCode)
				}
				if !bytes.Equal(body, b2) {
					t.Errorf("body differs from %s's:\n%s\n%s", tc.sameAs, body, b2)
				}
				if e1, e2 := resp.Header.Get("ETag"), r2.Header.Get("ETag"); e1 != e2 {
					t.Errorf("ETag %s differs from %s's %s", e1, tc.sameAs, e2)
				}
			}
		})
	}

	t.Run("a listed variant is the base with only the id changed", func(t *testing.T) {
		_, base := g.lookup(t, key, "testco/alpha", nil)
		_, variant := g.lookup(t, key, "testco/alpha:nitro", nil)
		b, v := modelData(t, base), modelData(t, variant)
		wantRaw(t, "variant", v, "id", `"testco/alpha:nitro"`)
		delete(b, "id")
		delete(v, "id")
		if !equalRaw(b, v) {
			t.Errorf("variant differs from its base beyond the id:\n%s\n%s", base, variant)
		}
	})
	t.Run("a latest alias is its target plus alias_target", func(t *testing.T) {
		_, target := g.lookup(t, key, "openai/gpt-4", nil)
		_, alias := g.lookup(t, key, "~openai/gpt-latest", nil)
		tg, al := modelData(t, target), modelData(t, alias)
		delete(al, "alias_target")
		if !equalRaw(tg, al) {
			t.Errorf("alias differs from its target beyond alias_target:\n%s\n%s", target, alias)
		}
	})
}

// equalRaw compares two raw objects key by key, byte for byte.
func equalRaw(a, b map[string]json.RawMessage) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || !bytes.Equal(v, w) {
			return false
		}
	}
	return true
}

// TestModelLookupBadPaths sends path values a client or an attacker may
// send: each is a 404 or 400 in the error envelope, never a 500, and never
// resolves across segments.
func TestModelLookupBadPaths(t *testing.T) {
	g := startCatalogGateway(t, modelTestCatalog)
	key := g.newKey(t, "alice")
	long := strings.Repeat("a", 300)
	tests := []struct {
		name   string
		target string
		status []int // accepted statuses
	}{
		{"encoded slash inside the slug", "/api/v1/model/openai/gpt-4%2Ffree", []int{404}},
		{"encoded slash inside the slug, lower case", "/api/v1/model/openai/gpt-4%2ffree", []int{404}},
		{"encoded slash inside the author", "/api/v1/model/testco%2Falpha/x", []int{404}},
		{"id with an encoded slash as one segment", "/api/v1/model/testco%2Falpha", []int{404}},
		{"encoded traversal", "/api/v1/model/testco/..%2F..%2Fmodels", []int{404}},
		{"empty slug", "/api/v1/model/testco/", []int{404}},
		{"empty author", "/api/v1/model//alpha", []int{404}},
		{"both segments empty", "/api/v1/model//", []int{404}},
		{"no slug segment", "/api/v1/model/testco", []int{404}},
		{"extra segment", "/api/v1/model/testco/alpha/extra", []int{404}},
		{"over-long slug", "/api/v1/model/testco/" + long, []int{404}},
		{"over-long author", "/api/v1/model/" + long + "/alpha", []int{404}},
		{"over-long once decoded", "/api/v1/model/testco/" + strings.Repeat("%61", 300), []int{404}},
		{"very long slug", "/api/v1/model/testco/" + strings.Repeat("b", 20000), []int{404, 414}},
		{"invalid UTF-8 in the slug", "/api/v1/model/testco/alpha%ff", []int{400}},
		{"invalid UTF-8 in the slug, upper-case escape", "/api/v1/model/testco/alpha%FF", []int{400}},
		{"invalid UTF-8 in the author", "/api/v1/model/%ff/alpha", []int{400}},
		{"truncated UTF-8 sequence", "/api/v1/model/testco/alpha%C3", []int{400}},
		{"overlong UTF-8 encoding of a slash", "/api/v1/model/testco/a%C0%AFb", []int{400}},
		{"encoded NUL", "/api/v1/model/testco/alpha%00", []int{400, 404}},
		{"encoded newline", "/api/v1/model/testco/alpha%0A", []int{400, 404}},
		{"a literal percent sign", "/api/v1/model/testco/alpha%25zz", []int{400, 404}},
		{"encoded space", "/api/v1/model/testco/%20alpha", []int{404}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			resp, body := g.rawGet(t, tc.target, key)
			if !slices.Contains(tc.status, resp.StatusCode) {
				t.Fatalf("status %d, want one of %v; body %.300s", resp.StatusCode, tc.status, body)
			}
			if resp.StatusCode == http.StatusRequestURITooLong {
				return // refused by net/http before the gateway sees it
			}
			wantModelEnvelope(t, tc.name, resp, body, resp.StatusCode)
		})
	}

	// A malformed escape cannot reach the gateway: net/http refuses the
	// request line itself with a plain-text 400, so no envelope is possible
	// there. What matters is that it is a 400, not a 5xx or a resolution.
	for _, target := range []string{
		"/api/v1/model/testco/alpha%zz",
		"/api/v1/model/testco/alpha%",
		"/api/v1/model/testco/alpha%3",
		"/api/v1/model/%zztestco/alpha",
	} {
		t.Run("broken escape "+target, func(t *testing.T) {
			resp, body := g.rawGet(t, target, key)
			if resp.StatusCode != http.StatusBadRequest {
				t.Fatalf("status %d, want 400; body %.300s", resp.StatusCode, body)
			}
		})
	}
}

// TestModelLookupDecodesOnce: a path value is percent-decoded exactly once.
// "%253A" is the three characters "%3A", not a colon: decoding it twice
// would let a client reach ids by a second encoding that filters in front
// of the gateway (WAFs, logs, allowlists keyed on the path) do not see.
func TestModelLookupDecodesOnce(t *testing.T) {
	g := startCatalogGateway(t, modelTestCatalog)
	key := g.newKey(t, "alice")
	for _, target := range []string{
		"/api/v1/model/openai/gpt-4%253Afree",  // slug "gpt-4%3Afree"
		"/api/v1/model/%257Eopenai/gpt-latest", // author "%7Eopenai"
		"/api/v1/model/testco/%2561lpha",       // slug "%61lpha"
	} {
		t.Run(target, func(t *testing.T) {
			resp, body := g.rawGet(t, target, key)
			wantModelEnvelope(t, target, resp, body, http.StatusNotFound)
		})
	}
}

// TestModelWireFields checks the raw JSON of each kind of model against the
// contract's required / optional / nullable rules.
func TestModelWireFields(t *testing.T) {
	g := startCatalogGateway(t, modelTestCatalog)
	key := g.newKey(t, "alice")
	get := func(t *testing.T, id string) map[string]json.RawMessage {
		t.Helper()
		resp, body := g.lookup(t, key, id, nil)
		if resp.StatusCode != 200 {
			t.Fatalf("GET %s = %d %.300s", id, resp.StatusCode, body)
		}
		return modelData(t, body)
	}

	t.Run("optional fields absent, required nullable fields null", func(t *testing.T) {
		d := get(t, "testco/plain")
		wantKeys(t, "data", d, "id", "canonical_slug", "name", "created", "context_length", "pricing",
			"architecture", "top_provider", "per_request_limits", "supported_parameters",
			"default_parameters", "supported_voices", "links")
		wantRaw(t, "data", d, "context_length", "null")
		wantRaw(t, "data", d, "per_request_limits", "null")
		wantRaw(t, "data", d, "default_parameters", "null")
		wantRaw(t, "data", d, "supported_voices", "null")
		wantRaw(t, "data", d, "supported_parameters", "[]")
		wantRaw(t, "data", d, "created", "1767225601")
		p := rawObject(t, d["pricing"])
		wantKeys(t, "pricing", p, "prompt", "completion")
		wantRaw(t, "pricing", p, "prompt", `"0.000001"`)
		a := rawObject(t, d["architecture"])
		wantKeys(t, "architecture", a, "modality", "input_modalities", "output_modalities")
		wantRaw(t, "architecture", a, "modality", "null")
		wantRaw(t, "architecture", a, "input_modalities", `["text"]`)
		tp := rawObject(t, d["top_provider"])
		wantKeys(t, "top_provider", tp, "is_moderated")
		wantRaw(t, "top_provider", tp, "is_moderated", "false")
	})

	t.Run("every optional field present, numbers and prices verbatim", func(t *testing.T) {
		d := get(t, "testco/alpha")
		wantKeys(t, "data", d, "id", "canonical_slug", "name", "created", "description", "context_length",
			"expiration_date", "knowledge_cutoff", "hub_id", "pricing", "architecture", "top_provider",
			"per_request_limits", "supported_parameters", "default_parameters", "supported_voices", "links",
			"reasoning", "benchmarks")
		wantRaw(t, "data", d, "canonical_slug", `"testco/alpha-20260101"`)
		wantRaw(t, "data", d, "created", "1767225600")
		wantRaw(t, "data", d, "context_length", "200000")
		wantRaw(t, "data", d, "expiration_date", `"2099-12-31"`)
		wantRaw(t, "data", d, "knowledge_cutoff", `"2025-06-30"`)
		wantRaw(t, "data", d, "hub_id", `"testco/Alpha-1"`)
		wantRaw(t, "data", d, "supported_voices", "null")
		if got := rawString(t, d["description"]); got != "Alpha <b>bold</b> & friends." {
			t.Errorf("description = %q", got)
		}

		p := rawObject(t, d["pricing"])
		wantKeys(t, "pricing", p, "prompt", "completion", "input_cache_read", "input_cache_write", "discount", "overrides")
		wantRaw(t, "pricing", p, "prompt", `"0.0000030"`)
		wantRaw(t, "pricing", p, "completion", `"0.000015"`)
		wantRaw(t, "pricing", p, "input_cache_write", `"0.00000375"`)
		wantRaw(t, "pricing", p, "discount", "0.25")
		var overrides []map[string]json.RawMessage
		if err := json.Unmarshal(p["overrides"], &overrides); err != nil || len(overrides) != 2 {
			t.Fatalf("overrides = %s (%v), want two objects", p["overrides"], err)
		}
		wantKeys(t, "overrides[0]", overrides[0], "min_prompt_tokens", "prompt", "completion")
		wantRaw(t, "overrides[0]", overrides[0], "min_prompt_tokens", "200000")
		wantRaw(t, "overrides[0]", overrides[0], "completion", `"0.0000225"`)
		wantKeys(t, "overrides[1]", overrides[1], "utc_start", "utc_end", "prompt")
		wantRaw(t, "overrides[1]", overrides[1], "utc_start", "2200")
		wantRaw(t, "overrides[1]", overrides[1], "utc_end", "600")

		a := rawObject(t, d["architecture"])
		wantKeys(t, "architecture", a, "modality", "input_modalities", "output_modalities", "instruct_type", "tokenizer")
		wantRaw(t, "architecture", a, "modality", `"text+image->text"`)
		wantRaw(t, "architecture", a, "instruct_type", "null")
		wantRaw(t, "architecture", a, "tokenizer", `"Claude"`)

		tp := rawObject(t, d["top_provider"])
		wantKeys(t, "top_provider", tp, "context_length", "is_moderated", "max_completion_tokens")
		wantRaw(t, "top_provider", tp, "max_completion_tokens", "64000")

		l := rawObject(t, d["per_request_limits"])
		wantKeys(t, "per_request_limits", l, "prompt_tokens", "completion_tokens")
		wantRaw(t, "per_request_limits", l, "prompt_tokens", "100000")

		dp := rawObject(t, d["default_parameters"])
		wantKeys(t, "default_parameters", dp, "temperature", "top_p", "top_k")
		wantRaw(t, "default_parameters", dp, "top_k", "40")
		wantRaw(t, "default_parameters", dp, "top_p", "0.95")

		r := rawObject(t, d["reasoning"])
		wantKeys(t, "reasoning", r, "mandatory", "default_effort", "default_enabled", "supported_efforts", "supports_max_tokens")
		wantRaw(t, "reasoning", r, "supports_max_tokens", "true")
		wantRaw(t, "reasoning", r, "supported_efforts", `["high","medium","low","none"]`)
		wantRaw(t, "reasoning", r, "default_effort", `"medium"`)

		b := rawObject(t, d["benchmarks"])
		wantKeys(t, "benchmarks", b, "arena_benchmark", "index_benchmark")
		var arena []map[string]json.RawMessage
		if err := json.Unmarshal(b["arena_benchmark"], &arena); err != nil || len(arena) != 1 {
			t.Fatalf("arena_benchmark = %s (%v)", b["arena_benchmark"], err)
		}
		wantKeys(t, "arena_benchmark[0]", arena[0], "arena", "category", "rating", "win_rate", "rank")
		wantRaw(t, "arena_benchmark[0]", arena[0], "rank", "2")
		wantRaw(t, "arena_benchmark[0]", arena[0], "rating", "1402.5")
		ix := rawObject(t, b["index_benchmark"])
		wantKeys(t, "index_benchmark", ix, "intelligence_index", "coding_index", "agentic_index")
		wantRaw(t, "index_benchmark", ix, "coding_index", "null")
	})

	t.Run("reasoning without max_tokens support and without an effort allowlist", func(t *testing.T) {
		d := get(t, "testco/thinker")
		if _, ok := d["benchmarks"]; ok {
			t.Error("benchmarks present for a model without benchmark data")
		}
		r := rawObject(t, d["reasoning"])
		wantKeys(t, "reasoning", r, "mandatory", "default_effort", "supported_efforts")
		wantRaw(t, "reasoning", r, "mandatory", "true")
		wantRaw(t, "reasoning", r, "default_effort", "null")
		wantRaw(t, "reasoning", r, "supported_efforts", "null")
		tp := rawObject(t, d["top_provider"])
		wantKeys(t, "top_provider", tp, "context_length", "is_moderated", "max_completion_tokens")
		wantRaw(t, "top_provider", tp, "context_length", "null")
		wantRaw(t, "top_provider", tp, "max_completion_tokens", "null")
		dp := rawObject(t, d["default_parameters"])
		wantKeys(t, "default_parameters", dp, "temperature")
		wantRaw(t, "default_parameters", dp, "temperature", "null")
		wantRaw(t, "architecture", rawObject(t, d["architecture"]), "instruct_type", `"deepseek-r1"`)
		wantRaw(t, "pricing", rawObject(t, d["pricing"]), "internal_reasoning", `"0.000004"`)
	})

	t.Run("non-reasoning model has no reasoning key", func(t *testing.T) {
		for _, id := range []string{"testco/plain", "openai/gpt-4", "openai/gpt-4:free", "voiceco/speak"} {
			if r, ok := get(t, id)["reasoning"]; ok {
				t.Errorf("%s: reasoning = %s, want it absent", id, r)
			}
		}
	})

	t.Run("text to speech lists its voices", func(t *testing.T) {
		d := get(t, "voiceco/speak")
		wantRaw(t, "data", d, "supported_voices", `["alloy","echo","nova"]`)
		wantRaw(t, "architecture", rawObject(t, d["architecture"]), "output_modalities", `["speech"]`)
		wantRaw(t, "pricing", rawObject(t, d["pricing"]), "audio_output", `"0.000012"`)
	})

	t.Run("empty default_parameters stays an empty object", func(t *testing.T) {
		wantRaw(t, "data", get(t, "openai/gpt-4"), "default_parameters", "{}")
	})

	t.Run("own variant entry keeps its own limits", func(t *testing.T) {
		d := get(t, "openai/gpt-4:free")
		l := rawObject(t, d["per_request_limits"])
		wantRaw(t, "per_request_limits", l, "prompt_tokens", "1000")
		wantRaw(t, "per_request_limits", l, "completion_tokens", "500")
		wantRaw(t, "data", d, "name", `"OpenAI: GPT-4 (free)"`)
	})
}

// getModelList GETs /api/v1/models?output_modalities=all (every model,
// not only the default's text ones) and returns the raw elements of data.
func getModelList(t *testing.T, g *testGateway, key string) (*http.Response, []byte, []json.RawMessage) {
	t.Helper()
	resp, body := g.do(t, "GET", "/api/v1/models?output_modalities=all", key, nil, nil)
	if resp.StatusCode != 200 {
		t.Fatalf("GET /api/v1/models = %d %.300s", resp.StatusCode, body)
	}
	top := rawObject(t, body)
	if len(top) != 3 || top["links"] == nil || top["total_count"] == nil {
		t.Fatalf("list body keys = %v, want data, links, total_count", rawKeys(top))
	}
	var items []json.RawMessage
	if err := json.Unmarshal(top["data"], &items); err != nil {
		t.Fatalf("data is not an array: %v", err)
	}
	return resp, body, items
}

// checkListMatchesLookups asserts that the list is sorted by id, and that
// each listed model is exactly what looking it up returns. It returns the
// ids and each model's raw data object by id.
func checkListMatchesLookups(t *testing.T, g *testGateway, key string) ([]string, map[string]map[string]json.RawMessage) {
	t.Helper()
	_, body, items := getModelList(t, g, key)
	noGatewayOnlyKeys(t, "GET /api/v1/models", body)
	ids := make([]string, len(items))
	byID := make(map[string]map[string]json.RawMessage, len(items))
	for i, raw := range items {
		d := rawObject(t, raw)
		ids[i] = rawString(t, d["id"])
		byID[ids[i]] = d
		if i > 0 && ids[i-1] >= ids[i] {
			t.Errorf("list not sorted by id: %q before %q", ids[i-1], ids[i])
		}
		resp, one := g.lookup(t, key, ids[i], nil)
		if resp.StatusCode != 200 {
			t.Errorf("listed %s, but GET = %d", ids[i], resp.StatusCode)
			continue
		}
		var listed, looked bytes.Buffer
		if err := json.Compact(&listed, raw); err != nil {
			t.Fatal(err)
		}
		if err := json.Compact(&looked, rawObject(t, one)["data"]); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(listed.Bytes(), looked.Bytes()) {
			t.Errorf("%s: listed model differs from its lookup:\n%s\n%s", ids[i], listed.Bytes(), looked.Bytes())
		}
	}
	return ids, byID
}

// TestModelList checks GET /api/v1/models: every model of the file, sorted
// by id, each exactly as its own lookup, with no gateway-only key.
func TestModelList(t *testing.T) {
	g := startCatalogGateway(t, modelTestCatalog)
	key := g.newKey(t, "alice")
	ids, _ := checkListMatchesLookups(t, g, key)
	if !slices.Equal(ids, modelTestIDs) {
		t.Errorf("listed ids = %v\nwant %v", ids, modelTestIDs)
	}
	// Unauthenticated listing is refused like every /api/v1 route.
	resp, body := g.do(t, "GET", "/api/v1/models", "", nil, nil)
	wantModelEnvelope(t, "unauthenticated list", resp, body, http.StatusUnauthorized)
}

// TestModelETag checks the strong ETag of lookups and of the list and the
// If-None-Match forms that must answer 304 without a body.
func TestModelETag(t *testing.T) {
	g := startCatalogGateway(t, modelTestCatalog)
	key := g.newKey(t, "alice")
	for _, path := range []string{"/api/v1/model/testco/alpha", "/api/v1/model/openai/gpt-4%3Afree", "/api/v1/model/~openai/gpt-latest", "/api/v1/models"} {
		t.Run(path, func(t *testing.T) {
			resp, body := g.do(t, "GET", path, key, nil, nil)
			if resp.StatusCode != 200 {
				t.Fatalf("GET = %d", resp.StatusCode)
			}
			etag := resp.Header.Get("ETag")
			if len(etag) < 3 || etag[0] != '"' || etag[len(etag)-1] != '"' || strings.Contains(etag[1:len(etag)-1], `"`) {
				t.Fatalf("ETag %q is not a strong entity tag", etag)
			}
			r2, b2 := g.do(t, "GET", path, key, nil, nil)
			if r2.Header.Get("ETag") != etag || !bytes.Equal(body, b2) {
				t.Fatalf("a second GET changed the answer: ETag %q -> %q", etag, r2.Header.Get("ETag"))
			}
			for _, tc := range []struct {
				name, inm string
				want      int
			}{
				{"exact", etag, 304},
				{"weak form", "W/" + etag, 304},
				{"in a list", `"0000", ` + etag + `, "ffff"`, 304},
				{"in a list without spaces", `"0000",` + etag, 304},
				{"star", "*", 304},
				{"other tag", `"0000"`, 200},
				{"other tags in a list", `"0000", W/"ffff"`, 200},
				{"tag without quotes", strings.Trim(etag, `"`), 200},
			} {
				t.Run(tc.name, func(t *testing.T) {
					resp, b := g.do(t, "GET", path, key, nil, http.Header{"If-None-Match": {tc.inm}})
					if resp.StatusCode != tc.want {
						t.Fatalf("If-None-Match %s: status %d, want %d", tc.inm, resp.StatusCode, tc.want)
					}
					if got := resp.Header.Get("ETag"); got != etag {
						t.Errorf("ETag %q, want %q", got, etag)
					}
					if tc.want == 304 && len(b) != 0 {
						t.Errorf("304 with a body of %d bytes", len(b))
					}
					if tc.want == 200 && !bytes.Equal(b, body) {
						t.Errorf("200 with a different body")
					}
				})
			}
		})
	}
	t.Run("different models have different tags", func(t *testing.T) {
		seen := map[string]string{}
		for _, id := range []string{"testco/alpha", "testco/alpha:nitro", "testco/plain", "openai/gpt-4", "openai/gpt-4:free", "~openai/gpt-latest", "~testco/alpha-latest"} {
			resp, _ := g.lookup(t, key, id, nil)
			etag := resp.Header.Get("ETag")
			if prev, dup := seen[etag]; dup {
				t.Errorf("%s and %s share ETag %s", prev, id, etag)
			}
			seen[etag] = id
		}
	})
}

// TestModelAllowlist: a key made with `keys create --models` may look up the
// models it lists (under any name that resolves to them) and gets a 403
// envelope for the others.
func TestModelAllowlist(t *testing.T) {
	g := startCatalogGateway(t, modelTestCatalog)
	tests := []struct {
		name   string
		models string
		allow  []string
		deny   []string
	}{
		{
			name: "one base model", models: "testco/alpha",
			allow: []string{"testco/alpha", "testco/alpha-20260101", "testco/alpha:nitro", "testco/alpha-classic:floor", "~testco/alpha-latest", "%7Etestco/alpha-latest"},
			deny:  []string{"testco/plain", "openai/gpt-4", "openai/gpt-4:free", "~openai/gpt-latest", "voiceco/speak"},
		},
		{
			name: "two models", models: "openai/gpt-4,voiceco/speak",
			allow: []string{"openai/gpt-4", "openai/gpt-4%3Anitro", "~openai/gpt-latest", "voiceco/speak", "~voiceco/speak-latest"},
			deny:  []string{"testco/alpha", "testco/alpha-classic", "testco/thinker", "~testco/alpha-latest"},
		},
		{
			name: "one variant only", models: "openai/gpt-4:free",
			allow: []string{"openai/gpt-4:free", "openai/gpt-4%3Afree"},
			deny:  []string{"openai/gpt-4", "openai/gpt-4:nitro", "~openai/gpt-latest", "testco/alpha"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			key := g.newKey(t, "carol", "--models", tc.models)
			for _, id := range tc.allow {
				if resp, body := g.lookup(t, key, id, nil); resp.StatusCode != 200 {
					t.Errorf("allowed %s: %d %.200s", id, resp.StatusCode, body)
				}
			}
			for _, id := range tc.deny {
				resp, body := g.lookup(t, key, id, nil)
				wantModelEnvelope(t, "denied "+id, resp, body, http.StatusForbidden)
				if bytes.Contains(body, []byte(`"data"`)) {
					t.Errorf("denied %s: the body carries data", id)
				}
			}
		})
	}
	t.Run("key without an allowlist", func(t *testing.T) {
		key := g.newKey(t, "dave")
		for _, id := range modelTestIDs {
			if resp, _ := g.lookup(t, key, id, nil); resp.StatusCode != 200 {
				t.Errorf("%s: %d", id, resp.StatusCode)
			}
		}
	})
	t.Run("management key", func(t *testing.T) {
		key := g.newKey(t, "erin", "--management")
		if resp, body := g.lookup(t, key, "testco/alpha", nil); resp.StatusCode != 200 {
			t.Errorf("management key lookup: %d %.200s", resp.StatusCode, body)
		}
	})
}

// pollUntil polls cond until it holds or the deadline passes.
func pollUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// reloadsRefused reads the refused-reload counter from /metrics.
func reloadsRefused(t *testing.T, g *testGateway) int {
	t.Helper()
	resp, body := g.do(t, "GET", "/metrics", "", nil, nil)
	if resp.StatusCode != 200 {
		t.Fatalf("GET /metrics = %d", resp.StatusCode)
	}
	const name = `gateway_catalog_reloads_total{result="refused"} `
	for _, line := range strings.Split(string(body), "\n") {
		if v, ok := strings.CutPrefix(line, name); ok {
			n, err := strconv.ParseFloat(v, 64)
			if err != nil {
				t.Fatalf("metric line %q: %v", line, err)
			}
			return int(n)
		}
	}
	return 0
}

// lookupStatus is the status of a lookup of id.
func (g *testGateway) lookupStatus(t *testing.T, key, id string) int {
	t.Helper()
	resp, _ := g.lookup(t, key, id, nil)
	return resp.StatusCode
}

// wantGatewayHealthy checks that the process and its dependencies report well.
func wantGatewayHealthy(t *testing.T, g *testGateway) {
	t.Helper()
	for _, path := range []string{"/healthz", "/readyz"} {
		if resp, body := g.do(t, "GET", path, "", nil, nil); resp.StatusCode != 200 {
			t.Errorf("GET %s = %d %s", path, resp.StatusCode, body)
		}
	}
}

// wantBrokenRefused checks that err refuses a catalog file listing every planted
// problem of broken.yaml, each with its model id or path.
func wantBrokenRefused(t *testing.T, err error) {
	t.Helper()
	if !errors.Is(err, catalog.ErrInvalid) {
		t.Fatalf("reload of a broken file: %v, want catalog.ErrInvalid", err)
	}
	var le *catalog.LoadError
	if !errors.As(err, &le) {
		t.Fatalf("reload error %T is not a *catalog.LoadError", err)
	}
	planted := []struct{ model, field string }{
		{"testco/alpha", "pricing.overrides[0].utc_end"},
		{"testco/beta", "aliases[0]"},
		{"testco/beta", "architecture.input_modalities[1]"},
		{"", "latest.~testco/ghost-latest"},
	}
	for _, p := range planted {
		found := slices.ContainsFunc(le.Problems, func(q catalog.Problem) bool {
			return q.Model == p.model && q.Field == p.field && q.Line > 0
		})
		if !found {
			t.Errorf("no problem for %s %s in:\n%s", p.model, p.field, strings.Join(le.Strings(), "\n"))
		}
	}
}

// TestModelHotReload changes the catalog file under a running gateway: by
// atomic rename, by an in-place write, then to a broken file (refused, the
// last good catalog keeps serving) and back to a good one.
func TestModelHotReload(t *testing.T) {
	path, base := copyCatalog(t)
	g := startCatalogGateway(t, path)
	key := g.newKey(t, "alice")
	if s := g.lookupStatus(t, key, "testco/renamed"); s != 404 {
		t.Fatalf("testco/renamed before any change: %d", s)
	}

	// Atomic rename.
	v2 := withNewcomer(base, "renamed")
	writeAtomically(t, path, v2)
	pollUntil(t, "the renamed-in model", func() bool { return g.lookupStatus(t, key, "testco/renamed") == 200 })
	if s := g.lookupStatus(t, key, "testco/alpha"); s != 200 {
		t.Errorf("testco/alpha after reload: %d", s)
	}

	// In-place write: the new model appears, the previous one goes.
	v3 := withNewcomer(base, "inplace")
	writeInPlace(t, path, v3)
	pollUntil(t, "the written-in model", func() bool { return g.lookupStatus(t, key, "testco/inplace") == 200 })
	if s := g.lookupStatus(t, key, "testco/renamed"); s != 404 {
		t.Errorf("testco/renamed after the next version: %d, want 404", s)
	}
	_, _, items := getModelList(t, g, key)
	if len(items) != len(modelTestIDs)+1 {
		t.Errorf("list has %d models, want %d", len(items), len(modelTestIDs)+1)
	}
	goodList, _ := g.do(t, "GET", "/api/v1/models", key, nil, nil)
	goodETag := goodList.Header.Get("ETag")

	// A broken file is refused; the last good catalog keeps serving.
	broken, err := os.ReadFile(brokenTestCatalog)
	if err != nil {
		t.Fatal(err)
	}
	refused := reloadsRefused(t, g)
	writeInPlace(t, path, broken)
	pollUntil(t, "the broken file to be refused", func() bool { return reloadsRefused(t, g) > refused })
	wantBrokenRefused(t, g.app.Catalog().Reload())
	if s := g.lookupStatus(t, key, "testco/inplace"); s != 200 {
		t.Errorf("last good catalog not served after a broken file: testco/inplace = %d", s)
	}
	if s := g.lookupStatus(t, key, "testco/beta"); s != 404 {
		t.Errorf("a model of the broken file is served: %d", s)
	}
	if resp, _ := g.do(t, "GET", "/api/v1/models", key, nil, nil); resp.Header.Get("ETag") != goodETag {
		t.Errorf("list changed after a broken file")
	}
	wantGatewayHealthy(t, g)

	// A good file again is taken.
	writeAtomically(t, path, withNewcomer(base, "recovered"))
	pollUntil(t, "the catalog after the broken file", func() bool { return g.lookupStatus(t, key, "testco/recovered") == 200 })
	if s := g.lookupStatus(t, key, "testco/inplace"); s != 404 {
		t.Errorf("testco/inplace after recovery: %d, want 404", s)
	}
	wantGatewayHealthy(t, g)
}

// TestModelReloadOnDemand uses the reload SIGHUP triggers: it takes effect
// before it returns, and a broken file is refused with every problem.
func TestModelReloadOnDemand(t *testing.T) {
	path, base := copyCatalog(t)
	g := startCatalogGateway(t, path)
	key := g.newKey(t, "alice")

	writeAtomically(t, path, withNewcomer(base, "sighup"))
	if err := g.app.Catalog().Reload(); err != nil {
		t.Fatalf("Reload: %v", err)
	}
	if s := g.lookupStatus(t, key, "testco/sighup"); s != 200 {
		t.Fatalf("testco/sighup right after Reload: %d", s)
	}

	renamed := renamedAlpha(t, withNewcomer(base, "sighup"), "Testco: Alpha Prime")
	writeAtomically(t, path, renamed)
	if err := g.app.Catalog().Reload(); err != nil {
		t.Fatalf("Reload: %v", err)
	}
	_, body := g.lookup(t, key, "testco/alpha-classic:nitro", nil)
	if got := rawString(t, modelData(t, body)["name"]); got != "Testco: Alpha Prime" {
		t.Errorf("variant of an alias after Reload: name %q", got)
	}

	broken, err := os.ReadFile(brokenTestCatalog)
	if err != nil {
		t.Fatal(err)
	}
	writeAtomically(t, path, broken)
	wantBrokenRefused(t, g.app.Catalog().Reload())
	if s := g.lookupStatus(t, key, "testco/sighup"); s != 200 {
		t.Errorf("last good catalog not served after a refused Reload: %d", s)
	}
	wantGatewayHealthy(t, g)

	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	if err := g.app.Catalog().Reload(); err == nil {
		t.Errorf("Reload of a missing file succeeded")
	}
	if s := g.lookupStatus(t, key, "testco/sighup"); s != 200 {
		t.Errorf("last good catalog not served after the file went missing: %d", s)
	}
}

// versionAnswer is one response a lookup may legitimately get.
type versionAnswer struct {
	etag string
	body []byte
}

// TestModelConcurrentReloads looks models up from several goroutines while
// the catalog flips between two versions: every answer is a 200 whose ETag
// and body are exactly one version's, never a mix and never an error.
func TestModelConcurrentReloads(t *testing.T) {
	path, base := copyCatalog(t)
	g := startCatalogGateway(t, path)
	key := g.newKey(t, "alice")
	versions := [][]byte{base, renamedAlpha(t, base, "Testco: Alpha Two")}
	paths := []string{"/api/v1/model/testco/alpha", "/api/v1/model/testco/alpha-classic:nitro", "/api/v1/model/%7Etestco/alpha-latest", "/api/v1/models"}

	// known[v][p] is version v's answer to paths[p].
	known := make([][]versionAnswer, len(versions))
	for v, data := range versions {
		writeAtomically(t, path, data)
		if err := g.app.Catalog().Reload(); err != nil {
			t.Fatalf("Reload version %d: %v", v, err)
		}
		for _, p := range paths {
			resp, body := g.do(t, "GET", p, key, nil, nil)
			if resp.StatusCode != 200 {
				t.Fatalf("GET %s = %d", p, resp.StatusCode)
			}
			known[v] = append(known[v], versionAnswer{resp.Header.Get("ETag"), body})
		}
	}
	if known[0][0].etag == known[1][0].etag || known[0][3].etag == known[1][3].etag {
		t.Fatal("the two versions have the same ETags: the test would prove nothing")
	}

	client := contractClient(t, &http.Transport{MaxIdleConnsPerHost: 8})
	client.Timeout = 10 * time.Second
	defer client.CloseIdleConnections()
	get := func(p string) (versionAnswer, int, error) {
		req, err := http.NewRequest("GET", g.URL+p, nil)
		if err != nil {
			return versionAnswer{}, 0, err
		}
		req.Header.Set("Authorization", "Bearer "+key)
		resp, err := client.Do(req)
		if err != nil {
			return versionAnswer{}, 0, err
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		return versionAnswer{resp.Header.Get("ETag"), body}, resp.StatusCode, err
	}

	var (
		seen     [2]atomic.Int64 // answers of each version
		requests atomic.Int64
		failures atomic.Int64
		stop     = make(chan struct{})
		wg       sync.WaitGroup
	)
	const workers = 4
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				p := i % len(paths)
				a, status, err := get(paths[p])
				requests.Add(1)
				if err != nil || status != 200 {
					if failures.Add(1) <= 5 {
						t.Errorf("GET %s during reloads: %d %v %.200s", paths[p], status, err, a.body)
					}
					continue
				}
				match := -1
				for v := range versions {
					if a.etag == known[v][p].etag && bytes.Equal(a.body, known[v][p].body) {
						match = v
					}
				}
				if match < 0 {
					if failures.Add(1) > 5 {
						continue
					}
					t.Errorf("GET %s during reloads: ETag %s with a body of no single version:\n%.400s", paths[p], a.etag, a.body)
					continue
				}
				seen[match].Add(1)
			}
		}()
	}

	// Flip versions; after each flip wait until some lookup has seen the
	// new version, so that lookups and reloads really interleave.
	for round := range 12 {
		v := round % 2
		before := seen[v].Load()
		writeAtomically(t, path, versions[v])
		if err := g.app.Catalog().Reload(); err != nil {
			t.Errorf("Reload round %d: %v", round, err)
			break
		}
		deadline := time.Now().Add(10 * time.Second)
		for seen[v].Load() == before && time.Now().Before(deadline) {
			time.Sleep(time.Millisecond)
		}
		if seen[v].Load() == before {
			t.Errorf("round %d: no lookup saw version %d", round, v)
			break
		}
	}
	close(stop)
	wg.Wait()
	t.Logf("%d lookups during 12 reloads (%d of version 0, %d of version 1)", requests.Load(), seen[0].Load(), seen[1].Load())
	if seen[0].Load() == 0 || seen[1].Load() == 0 {
		t.Errorf("a version was never observed")
	}
}

// TestModelShippedCatalog serves configs/models.yaml (the default of the
// test config) and checks that it is the catalog the issue asks for, and
// that every name it declares resolves.
func TestModelShippedCatalog(t *testing.T) {
	t.Parallel() // computing, beside the tests that wait
	g := startGateway(t, modelTestConfig(t))
	key := g.newKey(t, "alice")

	ids, byID := checkListMatchesLookups(t, g, key)
	if len(ids) < 40 {
		t.Errorf("%d models, want at least 40", len(ids))
	}

	authors := map[string]bool{}
	var free, tts, embeddings, imageOut, tildes, overrides, efforts, benchmarks, cache []string
	for _, id := range ids {
		d := byID[id]
		author, _, _ := strings.Cut(id, "/")
		if strings.HasPrefix(author, "~") {
			tildes = append(tildes, id)
		} else {
			authors[author] = true
		}
		if strings.HasSuffix(id, ":free") {
			free = append(free, id)
		}
		var arch struct {
			Output []string `json:"output_modalities"`
		}
		if err := json.Unmarshal(d["architecture"], &arch); err != nil {
			t.Fatalf("%s architecture: %v", id, err)
		}
		var voices []string
		_ = json.Unmarshal(d["supported_voices"], &voices)
		if slices.Contains(arch.Output, "speech") && len(voices) > 0 {
			tts = append(tts, id)
		}
		if slices.Contains(arch.Output, "embeddings") {
			embeddings = append(embeddings, id)
		}
		if slices.Contains(arch.Output, "image") {
			imageOut = append(imageOut, id)
		}
		p := rawObject(t, d["pricing"])
		for _, k := range []string{"prompt", "completion"} {
			if v, ok := p[k]; !ok || v[0] != '"' {
				t.Errorf("%s: pricing.%s = %s, want a decimal string", id, k, v)
			}
		}
		if o, ok := p["overrides"]; ok && string(o) != "[]" {
			overrides = append(overrides, id)
		}
		if _, ok := p["input_cache_read"]; ok {
			cache = append(cache, id)
		}
		if r, ok := d["reasoning"]; ok {
			if e, ok := rawObject(t, r)["supported_efforts"]; ok && e[0] == '[' && string(e) != "[]" {
				efforts = append(efforts, id)
			}
		}
		if _, ok := d["benchmarks"]; ok {
			benchmarks = append(benchmarks, id)
		}
	}
	for _, c := range []struct {
		what string
		ids  []string
		min  int
	}{
		{":free models", free, 3},
		{"text-to-speech models with supported_voices", tts, 1},
		{"embeddings models", embeddings, 1},
		{"image-output models", imageOut, 1},
		{"~ entries of their own", tildes, 1},
		{"models with pricing overrides", overrides, 1},
		{"models with cache pricing", cache, 1},
		{"reasoning models with an effort list", efforts, 1},
		{"models with benchmarks", benchmarks, 1},
	} {
		if len(c.ids) < c.min {
			t.Errorf("%d %s, want at least %d", len(c.ids), c.what, c.min)
		}
	}
	if len(authors) < 8 {
		t.Errorf("%d authors, want at least 8", len(authors))
	}

	// The gateway-only keys of the file: every alias, variant and latest
	// alias resolves as DESIGN.md §2 says.
	data, err := os.ReadFile("../../configs/models.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var file struct {
		Models []struct {
			ID       string   `yaml:"id"`
			Aliases  []string `yaml:"aliases"`
			Variants []string `yaml:"variants"`
		} `yaml:"models"`
		Latest map[string]string `yaml:"latest"`
	}
	if err := yaml.Unmarshal(data, &file); err != nil {
		t.Fatal(err)
	}
	var aliases, variants int
	for _, m := range file.Models {
		_, want := g.lookup(t, key, m.ID, nil)
		for _, a := range m.Aliases {
			aliases++
			resp, body := g.lookup(t, key, a, nil)
			if resp.StatusCode != 200 || !bytes.Equal(body, want) {
				t.Errorf("alias %s of %s: %d, or a body other than its target's", a, m.ID, resp.StatusCode)
			}
		}
		for _, v := range m.Variants {
			variants++
			vid := m.ID + ":" + v
			resp, body := g.lookup(t, key, strings.Replace(vid, ":", "%3A", 1), nil)
			if resp.StatusCode != 200 {
				t.Errorf("variant %s: %d", vid, resp.StatusCode)
				continue
			}
			d := modelData(t, body)
			if got := rawString(t, d["id"]); got != vid {
				t.Errorf("variant %s: data.id %q", vid, got)
			}
			if details := rawString(t, rawObject(t, d["links"])["details"]); strings.Contains(details, ":") {
				t.Errorf("variant %s: links.details %q names a variant", vid, details)
			}
		}
	}
	if aliases < 3 || variants < 2 {
		t.Errorf("%d slug aliases and %d listed variants, want at least 3 and 2", aliases, variants)
	}
	if len(file.Latest) < 1 {
		t.Errorf("no latest aliases")
	}
	for alias, target := range file.Latest {
		if !strings.HasPrefix(alias, "~") || !strings.HasSuffix(alias, "-latest") {
			t.Errorf("latest alias %q is not ~author/name-latest", alias)
		}
		resp, body := g.lookup(t, key, alias, nil)
		if resp.StatusCode != 200 {
			t.Errorf("%s: %d", alias, resp.StatusCode)
			continue
		}
		d := modelData(t, body)
		at := rawObject(t, d["alias_target"])
		tgt, ok := byID[target]
		if !ok {
			t.Errorf("%s: target %s is not listed", alias, target)
			continue
		}
		if s, n := rawString(t, at["slug"]), rawString(t, at["name"]); s != target || n != rawString(t, tgt["name"]) {
			t.Errorf("%s: alias_target {%q, %q}, want {%q, %q}", alias, s, n, target, rawString(t, tgt["name"]))
		}
		if got := rawString(t, d["id"]); got != target {
			t.Errorf("%s: data.id %q, want the target %q", alias, got, target)
		}
	}
	for _, id := range tildes {
		at := rawObject(t, byID[id]["alias_target"])
		if s := rawString(t, at["slug"]); g.lookupStatus(t, key, s) != 200 {
			t.Errorf("%s: alias_target.slug %q does not resolve", id, s)
		}
	}
	t.Logf("%d models from %d authors; %d :free, %d TTS, %d embeddings, %d image-output, %d ~ entries, %d latest, %d aliases, %d variants",
		len(ids), len(authors), len(free), len(tts), len(embeddings), len(imageOut), len(tildes), len(file.Latest), aliases, variants)
}
