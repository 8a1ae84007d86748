package e2e

// Black-box tests of the workspace API (POST /api/v1/workspaces and
// GET /api/v1/workspaces/{id}) through real HTTP against the whole wiring, on
// every metadata store. They check the spec's Workspace shape, the defaults
// and status codes of DESIGN.md §2, strict validation, per-user slug
// uniqueness under races, visibility, roles and Idempotency-Key handling.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"reflect"
	"regexp"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aigateway/gateway/client"
)

const (
	workspacesPath = "/api/v1/workspaces"
	// maxWorkspaceBody is the spec'd cap on a JSON request body (64 KiB).
	maxWorkspaceBody = 64 << 10
	// concurrentCreates is how many clients race in the race tests.
	concurrentCreates = 16
)

// Model ids of configs/models.yaml that the catalog resolves.
const (
	knownTextModel   = "openai/gpt-4o"
	knownImageModel  = "openai/gpt-5-image"
	knownVariantID   = "anthropic/claude-haiku-4.5:batch" // an entry of its own
	knownTildeLatest = "~cohere/command-latest"           // a latest: alias
)

var wsUUIDPattern = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`)

// TestWorkspaces runs the whole workspace suite once per metadata store, on
// one gateway per store. Subtests use their own users, so they never see
// each other's workspaces.
func TestWorkspaces(t *testing.T) {
	for _, sc := range metadataStores() {
		t.Run(sc.name, func(t *testing.T) {
			g := startWorkspaceGateway(t, sc)

			t.Run("CreateShapeAndDefaults", func(t *testing.T) { testWorkspaceCreateShape(t, g) })
			t.Run("CreateEveryField", func(t *testing.T) { testWorkspaceCreateEveryField(t, g) })
			t.Run("Validation", func(t *testing.T) { testWorkspaceValidation(t, g) })
			t.Run("BodyLimit", func(t *testing.T) { testWorkspaceBodyLimit(t, g) })
			t.Run("Get", func(t *testing.T) { testWorkspaceGet(t, g) })
			t.Run("DuplicateSlug", func(t *testing.T) { testWorkspaceDuplicateSlug(t, g) })
			t.Run("ConcurrentSlug", func(t *testing.T) { testWorkspaceConcurrentSlug(t, g) })
			t.Run("Auth", func(t *testing.T) { testWorkspaceAuth(t, g) })
			t.Run("Idempotency", func(t *testing.T) { testWorkspaceIdempotency(t, g) })
			t.Run("IdempotencyConcurrent", func(t *testing.T) { testWorkspaceIdempotencyConcurrent(t, g) })
			t.Run("IdempotencyKeyHeader", func(t *testing.T) { testWorkspaceIdempotencyKeyHeader(t, g) })
			t.Run("DefaultWorkspace", func(t *testing.T) { testWorkspaceDefault(t, g) })
		})
	}
}

// startWorkspaceGateway starts a gateway on the store of sc for a workspace
// suite.
func startWorkspaceGateway(t *testing.T, sc storeCase) *testGateway {
	t.Helper()
	cfg := testConfig(t)
	sc.configure(t, &cfg)
	// The suites send far more requests per key than the default burst
	// allows; rate limits have their own tests.
	off := false
	cfg.Limits.Rate.Enabled = &off
	return startGateway(t, cfg)
}

// wsReply is one HTTP answer, read whole.
type wsReply struct {
	status int
	header http.Header
	body   []byte
}

// wsSend is the harness's do without testing.T, so goroutines can call it.
func wsSend(g *testGateway, method, path, key string, body io.Reader, header http.Header) (wsReply, error) {
	req, err := http.NewRequest(method, g.URL+path, body)
	if err != nil {
		return wsReply{}, err
	}
	for k, vs := range header {
		req.Header[k] = vs
	}
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	resp, err := g.client.Do(req)
	if err != nil {
		return wsReply{}, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return wsReply{}, err
	}
	return wsReply{status: resp.StatusCode, header: resp.Header, body: b}, nil
}

// createWS posts body as JSON with extra headers (name, value pairs).
func createWS(t *testing.T, g *testGateway, key, body string, hdr ...string) wsReply {
	t.Helper()
	h := http.Header{"Content-Type": {"application/json"}}
	for i := 0; i+1 < len(hdr); i += 2 {
		h[http.CanonicalHeaderKey(hdr[i])] = []string{hdr[i+1]}
	}
	r, err := wsSend(g, http.MethodPost, workspacesPath, key, strings.NewReader(body), h)
	if err != nil {
		t.Fatalf("POST %s: %v", workspacesPath, err)
	}
	return r
}

// getWS reads a workspace by UUID or slug.
func getWS(t *testing.T, g *testGateway, key, idOrSlug string) wsReply {
	t.Helper()
	r, err := wsSend(g, http.MethodGet, workspacesPath+"/"+idOrSlug, key, nil, nil)
	if err != nil {
		t.Fatalf("GET workspace %q: %v", idOrSlug, err)
	}
	return r
}

// wsBody is a request body: the given fields as a JSON object.
func wsBody(fields map[string]any) string {
	b, err := json.Marshal(fields)
	if err != nil {
		panic(err)
	}
	return string(b)
}

// wsMustCreate creates a workspace and returns the reply and its data.
func wsMustCreate(t *testing.T, g *testGateway, key, body string, hdr ...string) (wsReply, map[string]any) {
	t.Helper()
	r := createWS(t, g, key, body, hdr...)
	if r.status != http.StatusCreated {
		t.Fatalf("create %s = %d %s, want 201", body, r.status, r.body)
	}
	return r, wsData(t, r)
}

// wsData decodes {"data": Workspace} and checks the Workspace's shape: every
// field of the spec, no other, each of its JSON type.
func wsData(t *testing.T, r wsReply) map[string]any {
	t.Helper()
	if ct := r.header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		t.Errorf("Content-Type = %q, want application/json", ct)
	}
	var outer map[string]json.RawMessage
	if err := json.Unmarshal(r.body, &outer); err != nil {
		t.Fatalf("body %s: %v", r.body, err)
	}
	if len(outer) != 1 || outer["data"] == nil {
		t.Fatalf("body %s: want exactly {\"data\": Workspace}", r.body)
	}
	var data map[string]any
	if err := json.Unmarshal(outer["data"], &data); err != nil {
		t.Fatalf("data %s: %v", outer["data"], err)
	}
	wsCheckShape(t, data)
	return data
}

// The JSON kinds of the Workspace's fields.
type wsKind int

const (
	wsKindUUID wsKind = iota
	wsKindString
	wsKindStringOrNull
	wsKindTimestamp
	wsKindTimestampOrNull
	wsKindBool
	wsKindNumber
	wsKindStringArrayOrNull
)

var wsFields = map[string]wsKind{
	"id":                                  wsKindUUID,
	"name":                                wsKindString,
	"slug":                                wsKindString,
	"description":                         wsKindString,
	"default_text_model":                  wsKindStringOrNull,
	"default_image_model":                 wsKindStringOrNull,
	"default_provider_sort":               wsKindStringOrNull,
	"default_guardrail_id":                wsKindUUID,
	"created_by":                          wsKindString,
	"created_at":                          wsKindTimestamp,
	"updated_at":                          wsKindTimestampOrNull,
	"include_byok_in_budgets":             wsKindBool,
	"io_logging_api_key_ids":              wsKindStringArrayOrNull,
	"io_logging_sampling_rate":            wsKindNumber,
	"is_data_discount_logging_enabled":    wsKindBool,
	"is_observability_broadcast_enabled":  wsKindBool,
	"is_observability_io_logging_enabled": wsKindBool,
}

func wsCheckShape(t *testing.T, data map[string]any) {
	t.Helper()
	for k := range data {
		if _, ok := wsFields[k]; !ok {
			t.Errorf("workspace has field %q the spec does not list", k)
		}
	}
	for field, kind := range wsFields {
		v, present := data[field]
		if !present {
			t.Errorf("workspace lacks field %q", field)
			continue
		}
		if !wsHasKind(v, kind) {
			t.Errorf("workspace field %q = %#v, wrong JSON type", field, v)
		}
	}
}

func wsHasKind(v any, kind wsKind) bool {
	switch kind {
	case wsKindUUID:
		s, ok := v.(string)
		return ok && wsUUIDPattern.MatchString(s)
	case wsKindString:
		_, ok := v.(string)
		return ok
	case wsKindStringOrNull:
		_, ok := v.(string)
		return ok || v == nil
	case wsKindTimestamp:
		s, ok := v.(string)
		return ok && wsIsUTCTimestamp(s)
	case wsKindTimestampOrNull:
		s, ok := v.(string)
		return v == nil || ok && wsIsUTCTimestamp(s)
	case wsKindBool:
		_, ok := v.(bool)
		return ok
	case wsKindNumber:
		_, ok := v.(float64)
		return ok
	case wsKindStringArrayOrNull:
		if v == nil {
			return true
		}
		list, ok := v.([]any)
		if !ok {
			return false
		}
		for _, e := range list {
			if _, ok := e.(string); !ok {
				return false
			}
		}
		return true
	}
	return false
}

// wsIsUTCTimestamp accepts ISO 8601 / RFC 3339 times written in UTC ("Z").
func wsIsUTCTimestamp(s string) bool {
	_, err := time.Parse(time.RFC3339Nano, s)
	return err == nil && strings.HasSuffix(s, "Z")
}

// wsErrorEnvelope checks r is the spec's error envelope with status (and
// message, when not empty) and returns error.metadata.
func wsErrorEnvelope(t *testing.T, r wsReply, status int, message string) map[string]any {
	t.Helper()
	if r.status != status {
		t.Fatalf("status = %d %s, want %d", r.status, r.body, status)
	}
	if ct := r.header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		t.Errorf("Content-Type = %q, want application/json", ct)
	}
	var env struct {
		Error *struct {
			Code     *int            `json:"code"`
			Message  *string         `json:"message"`
			Metadata json.RawMessage `json:"metadata"`
		} `json:"error"`
	}
	dec := json.NewDecoder(bytes.NewReader(r.body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&env); err != nil || env.Error == nil || env.Error.Code == nil || env.Error.Message == nil {
		t.Fatalf("body %s is not the error envelope (%v)", r.body, err)
	}
	if *env.Error.Code != status {
		t.Errorf("error.code = %d, want %d", *env.Error.Code, status)
	}
	if message != "" && *env.Error.Message != message {
		t.Errorf("error.message = %q, want %q", *env.Error.Message, message)
	}
	var meta map[string]any
	if len(env.Error.Metadata) > 0 {
		if err := json.Unmarshal(env.Error.Metadata, &meta); err != nil {
			t.Fatalf("error.metadata %s is neither an object nor null: %v", env.Error.Metadata, err)
		}
	}
	return meta
}

// wsOffendingFields lists, sorted, the fields a 400's metadata names. Body
// problems come as {"fields": {field: problem}}; the HTTP layer's own checks
// (Content-Type, Idempotency-Key) name their field at the top level.
func wsOffendingFields(t *testing.T, meta map[string]any) []string {
	t.Helper()
	fields, ok := meta["fields"].(map[string]any)
	if !ok {
		fields = meta
	}
	if len(fields) == 0 {
		t.Fatalf("error.metadata = %v names no field", meta)
	}
	var names []string
	for k, v := range fields {
		if s, ok := v.(string); !ok || s == "" {
			t.Errorf("metadata.fields[%q] = %#v, want a description of the problem", k, v)
		}
		names = append(names, k)
	}
	sort.Strings(names)
	return names
}

func wsSorted(s []string) []string {
	c := append([]string(nil), s...)
	sort.Strings(c)
	return c
}

func testWorkspaceCreateShape(t *testing.T, g *testGateway) {
	mgmt := g.newKey(t, "shape-user", "--management")
	before := time.Now().UTC().Add(-time.Second)
	r, data := wsMustCreate(t, g, mgmt, `{"name":"Research","slug":"research"}`)
	after := time.Now().UTC().Add(time.Second)

	if r.header.Get("X-Request-Id") == "" {
		t.Error("no X-Request-Id on the 201")
	}
	want := map[string]any{
		"name":                                "Research",
		"slug":                                "research",
		"description":                         "",
		"default_text_model":                  nil,
		"default_image_model":                 nil,
		"default_provider_sort":               nil,
		"created_by":                          "shape-user",
		"updated_at":                          nil,
		"include_byok_in_budgets":             false,
		"io_logging_api_key_ids":              nil,
		"io_logging_sampling_rate":            1.0,
		"is_data_discount_logging_enabled":    true,
		"is_observability_broadcast_enabled":  false,
		"is_observability_io_logging_enabled": false,
	}
	for field, v := range want {
		if !reflect.DeepEqual(data[field], v) {
			t.Errorf("%s = %#v, want %#v", field, data[field], v)
		}
	}
	created, err := time.Parse(time.RFC3339Nano, data["created_at"].(string))
	if err != nil || created.Before(before) || created.After(after) {
		t.Errorf("created_at = %v, want a time between %v and %v", data["created_at"], before, after)
	}
	if data["id"] == data["default_guardrail_id"] {
		t.Error("id and default_guardrail_id are the same UUID")
	}

	// Each creation makes its own ids.
	_, other := wsMustCreate(t, g, mgmt, `{"name":"Research 2","slug":"research-2"}`)
	for _, f := range []string{"id", "default_guardrail_id"} {
		if other[f] == data[f] {
			t.Errorf("two workspaces share %s %v", f, data[f])
		}
	}
}

func testWorkspaceCreateEveryField(t *testing.T, g *testGateway) {
	mgmt := g.newKey(t, "every-field-user", "--management")
	req := map[string]any{
		"name":                                "Ünïcode Team 名前 😀",
		"slug":                                "team-2",
		"description":                         "Für die Forschung — 研究",
		"default_text_model":                  knownTextModel,
		"default_image_model":                 knownImageModel,
		"default_provider_sort":               "latency",
		"io_logging_api_key_ids":              []any{"key-a", "key-b"},
		"io_logging_sampling_rate":            0.25,
		"is_data_discount_logging_enabled":    false,
		"is_observability_broadcast_enabled":  true,
		"is_observability_io_logging_enabled": true,
	}
	r, data := wsMustCreate(t, g, mgmt, wsBody(req))
	for field, v := range req {
		if !reflect.DeepEqual(data[field], v) {
			t.Errorf("%s = %#v, want the requested %#v", field, data[field], v)
		}
	}
	if data["updated_at"] != nil || data["include_byok_in_budgets"] != false || data["created_by"] != "every-field-user" {
		t.Errorf("updated_at/include_byok_in_budgets/created_by = %v/%v/%v, want null/false/every-field-user",
			data["updated_at"], data["include_byok_in_budgets"], data["created_by"])
	}
	// What was stored is what was answered, on every read path.
	for _, id := range []string{data["id"].(string), "team-2"} {
		got := getWS(t, g, mgmt, id)
		if got.status != http.StatusOK || !bytes.Equal(got.body, r.body) {
			t.Errorf("GET %s = %d %s\nwant 200 %s", id, got.status, got.body, r.body)
		}
	}
}

// wsCreateCase is one request body for POST /workspaces.
type wsCreateCase struct {
	name string
	// body builds the request; slug is unique to the case, for bodies that
	// should (or might wrongly) create a workspace.
	body        func(slug string) string
	contentType string // "" is application/json
	status      int
	fields      []string                                // 400: exactly the fields error.metadata names
	orFields    []string                                // 400: an equally right alternative to fields
	check       func(t *testing.T, data map[string]any) // 201: what the answer must say
}

// wsWith is a valid minimal body plus (or overridden by) extra; a field whose
// value is absent is left out.
func wsWith(extra map[string]any) func(string) string {
	return func(slug string) string {
		m := map[string]any{"name": "Valid name", "slug": slug}
		for k, v := range extra {
			if v == wsAbsent {
				delete(m, k)
				continue
			}
			m[k] = v
		}
		return wsBody(m)
	}
}

// wsAbsent marks a field wsWith leaves out.
var wsAbsent = &struct{ absent bool }{true}

// wsRaw is a literal body; "{{slug}}" becomes the case's slug.
func wsRaw(s string) func(string) string {
	return func(slug string) string { return strings.ReplaceAll(s, "{{slug}}", slug) }
}

// wsEchoes checks the answer carries value for field.
func wsEchoes(field string, value any) func(*testing.T, map[string]any) {
	return func(t *testing.T, data map[string]any) {
		t.Helper()
		if !reflect.DeepEqual(data[field], value) {
			t.Errorf("%s = %#v, want %#v", field, data[field], value)
		}
	}
}

func wsSlugCase(name, slug string, status int) wsCreateCase {
	c := wsCreateCase{name: name, body: wsWith(map[string]any{"slug": slug}), status: status}
	if status == http.StatusBadRequest {
		c.fields = []string{"slug"}
	} else {
		c.check = wsEchoes("slug", slug)
	}
	return c
}

func workspaceValidationCases() []wsCreateCase {
	const bad, ok = http.StatusBadRequest, http.StatusCreated
	cases := []wsCreateCase{
		{name: "minimal", body: wsWith(nil), status: ok, check: wsEchoes("name", "Valid name")},
		{name: "trailing whitespace after the object", body: wsRaw("{\"name\":\"n\",\"slug\":\"{{slug}}\"}\n\t "), status: ok},
		{name: "content type with charset", body: wsWith(nil), contentType: "application/json; charset=utf-8", status: ok},
		{name: "content type not JSON", body: wsWith(nil), contentType: "text/plain", status: bad, fields: []string{"content_type"}},

		// name: 1 to 100 characters, counted as characters.
		{name: "name 1 char", body: wsWith(map[string]any{"name": "x"}), status: ok, check: wsEchoes("name", "x")},
		{name: "name empty", body: wsWith(map[string]any{"name": ""}), status: bad, fields: []string{"name"}},
		{name: "name 100 ascii", body: wsWith(map[string]any{"name": strings.Repeat("a", 100)}), status: ok, check: wsEchoes("name", strings.Repeat("a", 100))},
		{name: "name 101 ascii", body: wsWith(map[string]any{"name": strings.Repeat("a", 101)}), status: bad, fields: []string{"name"}},
		{name: "name 100 two-byte chars", body: wsWith(map[string]any{"name": strings.Repeat("é", 100)}), status: ok, check: wsEchoes("name", strings.Repeat("é", 100))},
		{name: "name 101 two-byte chars", body: wsWith(map[string]any{"name": strings.Repeat("é", 101)}), status: bad, fields: []string{"name"}},
		{name: "name 100 three-byte chars", body: wsWith(map[string]any{"name": strings.Repeat("名", 100)}), status: ok, check: wsEchoes("name", strings.Repeat("名", 100))},
		{name: "name 101 three-byte chars", body: wsWith(map[string]any{"name": strings.Repeat("名", 101)}), status: bad, fields: []string{"name"}},
		{name: "name 100 four-byte chars", body: wsWith(map[string]any{"name": strings.Repeat("😀", 100)}), status: ok, check: wsEchoes("name", strings.Repeat("😀", 100))},
		{name: "name 101 four-byte chars", body: wsWith(map[string]any{"name": strings.Repeat("😀", 101)}), status: bad, fields: []string{"name"}},
		{name: "name 100 escaped chars", body: wsRaw(`{"name":"` + strings.Repeat(`\u00e9`, 100) + `","slug":"{{slug}}"}`), status: ok, check: wsEchoes("name", strings.Repeat("é", 100))},
		// JSON text is UTF-8 (RFC 8259 §8.1); a name that is not must not be
		// stored with its bytes silently replaced by U+FFFD.
		{name: "name invalid UTF-8", body: wsRaw("{\"name\":\"caf\xe9\",\"slug\":\"{{slug}}\"}"), status: bad, fields: []string{"name"}, orFields: []string{"body"}},
		{name: "name lone surrogate escape", body: wsRaw(`{"name":"a\ud800b","slug":"{{slug}}"}`), status: bad, fields: []string{"name"}, orFields: []string{"body"}},
		{name: "name number", body: wsWith(map[string]any{"name": 42}), status: bad, fields: []string{"name"}},
		{name: "name null", body: wsWith(map[string]any{"name": nil}), status: bad, fields: []string{"name"}},
		{name: "name bool", body: wsWith(map[string]any{"name": true}), status: bad, fields: []string{"name"}},
		{name: "name missing", body: wsWith(map[string]any{"name": wsAbsent}), status: bad, fields: []string{"name"}},

		// slug: 1 to 50 of ^[a-z0-9]+(?:-[a-z0-9]+)*$, ASCII only.
		wsSlugCase("slug one letter", "q", ok),
		wsSlugCase("slug digits", "2026", ok),
		wsSlugCase("slug segments", "a1-b2-c3", ok),
		wsSlugCase("slug 50 chars", strings.Repeat("s", 50), ok),
		wsSlugCase("slug 50 chars with hyphens", strings.Repeat("ab-", 16)+"ab", ok),
		wsSlugCase("slug 51 chars", strings.Repeat("s", 51), bad),
		wsSlugCase("slug empty", "", bad),
		wsSlugCase("slug leading hyphen", "-abc", bad),
		wsSlugCase("slug trailing hyphen", "abc-", bad),
		wsSlugCase("slug double hyphen", "ab--c", bad),
		wsSlugCase("slug only hyphen", "-", bad),
		wsSlugCase("slug uppercase", "Abc", bad),
		wsSlugCase("slug all uppercase", "ABC", bad),
		wsSlugCase("slug underscore", "a_b", bad),
		wsSlugCase("slug dot", "a.b", bad),
		wsSlugCase("slug space", "a b", bad),
		wsSlugCase("slug slash", "a/b", bad),
		wsSlugCase("slug trailing newline", "abc\n", bad),
		wsSlugCase("slug Cyrillic a", "\u0430bc", bad),         // "аbc"
		wsSlugCase("slug Cyrillic o inside", "r\u043eot", bad), // "rоot"
		wsSlugCase("slug fullwidth digits", "\uff11\uff12\uff13", bad),
		wsSlugCase("slug fullwidth digit inside", "ab\uff11", bad),
		wsSlugCase("slug fullwidth letters", "\uff41\uff42\uff43", bad),
		wsSlugCase("slug Kelvin sign", "\u212a", bad), // folds to "k" under case-insensitive matching
		wsSlugCase("slug non-breaking hyphen", "a\u2011b", bad),
		wsSlugCase("slug accented", "caf\u00e9", bad),
		{name: "slug number", body: wsWith(map[string]any{"slug": 123}), status: bad, fields: []string{"slug"}},
		{name: "slug null", body: wsWith(map[string]any{"slug": nil}), status: bad, fields: []string{"slug"}},
		{name: "slug missing", body: wsWith(map[string]any{"slug": wsAbsent}), status: bad, fields: []string{"slug"}},
		{name: "name and slug missing", body: wsRaw(`{}`), status: bad, fields: []string{"name", "slug"}},

		// description: at most 500 characters.
		{name: "description empty", body: wsWith(map[string]any{"description": ""}), status: ok, check: wsEchoes("description", "")},
		{name: "description null", body: wsWith(map[string]any{"description": nil}), status: ok, check: wsEchoes("description", "")},
		{name: "description 500 chars", body: wsWith(map[string]any{"description": strings.Repeat("ü", 500)}), status: ok, check: wsEchoes("description", strings.Repeat("ü", 500))},
		{name: "description 501 chars", body: wsWith(map[string]any{"description": strings.Repeat("ü", 501)}), status: bad, fields: []string{"description"}},
		{name: "description 501 ascii", body: wsWith(map[string]any{"description": strings.Repeat("d", 501)}), status: bad, fields: []string{"description"}},
		{name: "description number", body: wsWith(map[string]any{"description": 5}), status: bad, fields: []string{"description"}},

		// default_provider_sort: an enum.
		{name: "sort price", body: wsWith(map[string]any{"default_provider_sort": "price"}), status: ok, check: wsEchoes("default_provider_sort", "price")},
		{name: "sort throughput", body: wsWith(map[string]any{"default_provider_sort": "throughput"}), status: ok, check: wsEchoes("default_provider_sort", "throughput")},
		{name: "sort latency", body: wsWith(map[string]any{"default_provider_sort": "latency"}), status: ok, check: wsEchoes("default_provider_sort", "latency")},
		{name: "sort exacto", body: wsWith(map[string]any{"default_provider_sort": "exacto"}), status: ok, check: wsEchoes("default_provider_sort", "exacto")},
		{name: "sort null", body: wsWith(map[string]any{"default_provider_sort": nil}), status: ok, check: wsEchoes("default_provider_sort", nil)},
		{name: "sort capitalised", body: wsWith(map[string]any{"default_provider_sort": "Price"}), status: bad, fields: []string{"default_provider_sort"}},
		{name: "sort unknown", body: wsWith(map[string]any{"default_provider_sort": "fastest"}), status: bad, fields: []string{"default_provider_sort"}},
		{name: "sort empty", body: wsWith(map[string]any{"default_provider_sort": ""}), status: bad, fields: []string{"default_provider_sort"}},
		{name: "sort number", body: wsWith(map[string]any{"default_provider_sort": 1}), status: bad, fields: []string{"default_provider_sort"}},

		// io_logging_sampling_rate: [0.0001, 1].
		{name: "rate lower bound", body: wsWith(map[string]any{"io_logging_sampling_rate": 0.0001}), status: ok, check: wsEchoes("io_logging_sampling_rate", 0.0001)},
		{name: "rate lower bound exponent", body: wsRaw(`{"name":"n","slug":"{{slug}}","io_logging_sampling_rate":1e-4}`), status: ok, check: wsEchoes("io_logging_sampling_rate", 0.0001)},
		{name: "rate upper bound", body: wsWith(map[string]any{"io_logging_sampling_rate": 1}), status: ok, check: wsEchoes("io_logging_sampling_rate", 1.0)},
		{name: "rate upper bound written 1.0", body: wsRaw(`{"name":"n","slug":"{{slug}}","io_logging_sampling_rate":1.0}`), status: ok, check: wsEchoes("io_logging_sampling_rate", 1.0)},
		{name: "rate half", body: wsWith(map[string]any{"io_logging_sampling_rate": 0.5}), status: ok, check: wsEchoes("io_logging_sampling_rate", 0.5)},
		{name: "rate zero", body: wsWith(map[string]any{"io_logging_sampling_rate": 0}), status: bad, fields: []string{"io_logging_sampling_rate"}},
		{name: "rate just below", body: wsWith(map[string]any{"io_logging_sampling_rate": 0.00009999}), status: bad, fields: []string{"io_logging_sampling_rate"}},
		{name: "rate just above", body: wsWith(map[string]any{"io_logging_sampling_rate": 1.0001}), status: bad, fields: []string{"io_logging_sampling_rate"}},
		{name: "rate negative", body: wsWith(map[string]any{"io_logging_sampling_rate": -0.5}), status: bad, fields: []string{"io_logging_sampling_rate"}},
		{name: "rate overflows float64", body: wsRaw(`{"name":"n","slug":"{{slug}}","io_logging_sampling_rate":1e400}`), status: bad, fields: []string{"io_logging_sampling_rate"}},
		{name: "rate string", body: wsWith(map[string]any{"io_logging_sampling_rate": "0.5"}), status: bad, fields: []string{"io_logging_sampling_rate"}},
		{name: "rate bool", body: wsWith(map[string]any{"io_logging_sampling_rate": true}), status: bad, fields: []string{"io_logging_sampling_rate"}},

		// io_logging_api_key_ids: array of strings or null.
		{name: "key ids null stays null", body: wsWith(map[string]any{"io_logging_api_key_ids": nil}), status: ok, check: wsEchoes("io_logging_api_key_ids", nil)},
		{name: "key ids empty array", body: wsWith(map[string]any{"io_logging_api_key_ids": []any{}}), status: ok, check: wsEchoes("io_logging_api_key_ids", []any{})},
		{name: "key ids strings", body: wsWith(map[string]any{"io_logging_api_key_ids": []any{"k1", "k2"}}), status: ok, check: wsEchoes("io_logging_api_key_ids", []any{"k1", "k2"})},
		{name: "key ids string", body: wsWith(map[string]any{"io_logging_api_key_ids": "k1"}), status: bad, fields: []string{"io_logging_api_key_ids"}},
		{name: "key ids number", body: wsWith(map[string]any{"io_logging_api_key_ids": 7}), status: bad, fields: []string{"io_logging_api_key_ids"}},
		{name: "key ids object", body: wsWith(map[string]any{"io_logging_api_key_ids": map[string]any{"a": "b"}}), status: bad, fields: []string{"io_logging_api_key_ids"}},
		{name: "key ids numbers", body: wsWith(map[string]any{"io_logging_api_key_ids": []any{1, 2}}), status: bad, fields: []string{"io_logging_api_key_ids"}},
		{name: "key ids mixed", body: wsWith(map[string]any{"io_logging_api_key_ids": []any{"k1", 2}}), status: bad, fields: []string{"io_logging_api_key_ids"}},
		{name: "key ids null entry", body: wsWith(map[string]any{"io_logging_api_key_ids": []any{nil}}), status: bad, fields: []string{"io_logging_api_key_ids"}},
	}

	// The three booleans: true and false pass, anything else is refused.
	for _, f := range []string{"is_data_discount_logging_enabled", "is_observability_broadcast_enabled", "is_observability_io_logging_enabled"} {
		cases = append(cases,
			wsCreateCase{name: f + " true", body: wsWith(map[string]any{f: true}), status: ok, check: wsEchoes(f, true)},
			wsCreateCase{name: f + " false", body: wsWith(map[string]any{f: false}), status: ok, check: wsEchoes(f, false)},
			wsCreateCase{name: f + ` "true"`, body: wsWith(map[string]any{f: "true"}), status: bad, fields: []string{f}},
			wsCreateCase{name: f + ` "false"`, body: wsWith(map[string]any{f: "false"}), status: bad, fields: []string{f}},
			wsCreateCase{name: f + " 1", body: wsWith(map[string]any{f: 1}), status: bad, fields: []string{f}},
		)
	}

	cases = append(cases, []wsCreateCase{
		// Default models must be ids the catalog resolves.
		{name: "text model known", body: wsWith(map[string]any{"default_text_model": knownTextModel}), status: ok, check: wsEchoes("default_text_model", knownTextModel)},
		{name: "image model known", body: wsWith(map[string]any{"default_image_model": knownImageModel}), status: ok, check: wsEchoes("default_image_model", knownImageModel)},
		{name: "text model variant entry", body: wsWith(map[string]any{"default_text_model": knownVariantID}), status: ok, check: wsEchoes("default_text_model", knownVariantID)},
		{name: "text model tilde alias", body: wsWith(map[string]any{"default_text_model": knownTildeLatest}), status: ok, check: wsEchoes("default_text_model", knownTildeLatest)},
		{name: "text model null", body: wsWith(map[string]any{"default_text_model": nil}), status: ok, check: wsEchoes("default_text_model", nil)},
		{name: "text model unknown", body: wsWith(map[string]any{"default_text_model": "openai/no-such-model"}), status: bad, fields: []string{"default_text_model"}},
		{name: "text model without author", body: wsWith(map[string]any{"default_text_model": "gpt-4o"}), status: bad, fields: []string{"default_text_model"}},
		{name: "text model empty", body: wsWith(map[string]any{"default_text_model": ""}), status: bad, fields: []string{"default_text_model"}},
		{name: "text model number", body: wsWith(map[string]any{"default_text_model": 4}), status: bad, fields: []string{"default_text_model"}},
		{name: "image model unknown", body: wsWith(map[string]any{"default_image_model": "nobody/nothing"}), status: bad, fields: []string{"default_image_model"}},
		{name: "both models unknown", body: wsWith(map[string]any{"default_text_model": "x/y", "default_image_model": "y/z"}), status: bad, fields: []string{"default_image_model", "default_text_model"}},

		// The document itself.
		{name: "unknown field", body: wsWith(map[string]any{"colour": "blue"}), status: bad, fields: []string{"colour"}},
		{name: "response-only field", body: wsWith(map[string]any{"include_byok_in_budgets": true}), status: bad, fields: []string{"include_byok_in_budgets"}},
		{name: "id field", body: wsWith(map[string]any{"id": "00000000-0000-0000-0000-000000000000"}), status: bad, fields: []string{"id"}},
		{name: "duplicate name", body: wsRaw(`{"name":"a","name":"b","slug":"{{slug}}"}`), status: bad, fields: []string{"name"}},
		{name: "duplicate slug key", body: wsRaw(`{"name":"a","slug":"{{slug}}","slug":"{{slug}}-2"}`), status: bad, fields: []string{"slug"}},
		{name: "case-folded Name", body: wsRaw(`{"Name":"a","slug":"{{slug}}"}`), status: bad, fields: []string{"Name", "name"}},
		{name: "case-folded name beside name", body: wsRaw(`{"name":"a","NAME":"b","slug":"{{slug}}"}`), status: bad, fields: []string{"NAME"}},
		{name: "case-folded SLUG", body: wsRaw(`{"name":"a","SLUG":"{{slug}}"}`), status: bad, fields: []string{"SLUG", "slug"}},
		{name: "trailing object", body: wsRaw(`{"name":"a","slug":"{{slug}}"} {}`), status: bad, fields: []string{"body"}},
		{name: "trailing garbage", body: wsRaw(`{"name":"a","slug":"{{slug}}"}x`), status: bad, fields: []string{"body"}},
		{name: "trailing brace", body: wsRaw(`{"name":"a","slug":"{{slug}}"}}`), status: bad, fields: []string{"body"}},
		{name: "non-JSON", body: wsRaw(`name=a&slug={{slug}}`), status: bad, fields: []string{"body"}},
		{name: "empty body", body: wsRaw(``), status: bad, fields: []string{"body"}},
		{name: "whitespace body", body: wsRaw(" \n"), status: bad, fields: []string{"body"}},
		{name: "array body", body: wsRaw(`[{"name":"a","slug":"{{slug}}"}]`), status: bad, fields: []string{"body"}},
		{name: "null body", body: wsRaw(`null`), status: bad, fields: []string{"body"}},
		{name: "string body", body: wsRaw(`"{{slug}}"`), status: bad, fields: []string{"body"}},
		{name: "number body", body: wsRaw(`42`), status: bad, fields: []string{"body"}},
		{name: "truncated object", body: wsRaw(`{"name":"a","slug":"{{slug}}"`), status: bad, fields: []string{"body"}},
		{name: "trailing comma", body: wsRaw(`{"name":"a","slug":"{{slug}}",}`), status: bad, fields: []string{"body"}},
		{name: "single quotes", body: wsRaw(`{'name':'a','slug':'{{slug}}'}`), status: bad, fields: []string{"body"}},

		// Every problem is named at once.
		{name: "several invalid fields", body: wsWith(map[string]any{
			"name": strings.Repeat("n", 101), "slug": "Bad Slug", "default_provider_sort": "fast",
			"io_logging_sampling_rate": 0, "is_observability_broadcast_enabled": "yes", "extra": 1,
		}), status: bad, fields: []string{"default_provider_sort", "extra", "io_logging_sampling_rate", "is_observability_broadcast_enabled", "name", "slug"}},
		{name: "invalid field and unknown model", body: wsWith(map[string]any{"name": "", "default_text_model": "openai/no-such-model"}),
			status: bad, fields: []string{"default_text_model", "name"}},
	}...)
	return cases
}

func testWorkspaceValidation(t *testing.T, g *testGateway) {
	mgmt := g.newKey(t, "validation-user", "--management")
	for i, tc := range workspaceValidationCases() {
		t.Run(tc.name, func(t *testing.T) {
			slug := fmt.Sprintf("case-%d", i)
			body := tc.body(slug)
			ct := tc.contentType
			if ct == "" {
				ct = "application/json"
			}
			r, err := wsSend(g, http.MethodPost, workspacesPath, mgmt, strings.NewReader(body), http.Header{"Content-Type": {ct}})
			if err != nil {
				t.Fatal(err)
			}
			if r.status != tc.status {
				t.Fatalf("body %q: status = %d %s, want %d", body, r.status, r.body, tc.status)
			}
			if tc.status == http.StatusCreated {
				data := wsData(t, r)
				if tc.check != nil {
					tc.check(t, data)
				}
				return
			}
			meta := wsErrorEnvelope(t, r, http.StatusBadRequest, "Invalid request parameters")
			got := wsOffendingFields(t, meta)
			if !reflect.DeepEqual(got, wsSorted(tc.fields)) && (tc.orFields == nil || !reflect.DeepEqual(got, wsSorted(tc.orFields))) {
				t.Errorf("body %q: metadata names %v, want %v (metadata %v)", body, got, wsSorted(tc.fields), meta)
			}
			// A refused request creates nothing.
			if got := getWS(t, g, mgmt, slug); got.status != http.StatusNotFound {
				t.Errorf("after a 400, GET %s = %d %s, want 404", slug, got.status, got.body)
			}
		})
	}
}

// wsPaddedBody is a valid create body padded with spaces to exactly n bytes.
func wsPaddedBody(t *testing.T, slug string, n int) string {
	t.Helper()
	b := fmt.Sprintf(`{"name":"n","slug":%q}`, slug)
	if len(b) > n {
		t.Fatalf("cannot pad %d bytes to %d", len(b), n)
	}
	return b[:len(b)-1] + strings.Repeat(" ", n-len(b)) + "}"
}

// wsChunked hides the length of a body so the client sends it chunked.
type wsChunked struct{ io.Reader }

func testWorkspaceBodyLimit(t *testing.T, g *testGateway) {
	mgmt := g.newKey(t, "limit-user", "--management")
	jsonCT := http.Header{"Content-Type": {"application/json"}}
	cases := []struct {
		name    string
		slug    string
		size    int
		chunked bool
		status  int
	}{
		{"exactly 64 KiB", "at-limit", maxWorkspaceBody, false, http.StatusCreated},
		{"exactly 64 KiB chunked", "at-limit-chunked", maxWorkspaceBody, true, http.StatusCreated},
		{"64 KiB + 1", "over-limit", maxWorkspaceBody + 1, false, http.StatusRequestEntityTooLarge},
		{"64 KiB + 1 chunked", "over-limit-chunked", maxWorkspaceBody + 1, true, http.StatusRequestEntityTooLarge},
		{"1 MiB", "far-over-limit", 1 << 20, false, http.StatusRequestEntityTooLarge},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var body io.Reader = strings.NewReader(wsPaddedBody(t, tc.slug, tc.size))
			if tc.chunked {
				body = wsChunked{body}
			}
			r, err := wsSend(g, http.MethodPost, workspacesPath, mgmt, body, jsonCT)
			if err != nil {
				t.Fatal(err)
			}
			if tc.status == http.StatusCreated {
				if r.status != tc.status {
					t.Fatalf("status = %d %s, want 201", r.status, r.body)
				}
				wsData(t, r)
				return
			}
			wsErrorEnvelope(t, r, http.StatusRequestEntityTooLarge, "Request payload too large")
			if got := getWS(t, g, mgmt, tc.slug); got.status != http.StatusNotFound {
				t.Errorf("after a 413, GET %s = %d, want 404", tc.slug, got.status)
			}
		})
	}
	// A too large body that is also invalid JSON is still a 413: the size
	// is decided before the content.
	r, err := wsSend(g, http.MethodPost, workspacesPath, mgmt, strings.NewReader(strings.Repeat("x", maxWorkspaceBody+10)), jsonCT)
	if err != nil {
		t.Fatal(err)
	}
	wsErrorEnvelope(t, r, http.StatusRequestEntityTooLarge, "Request payload too large")
}

func testWorkspaceGet(t *testing.T, g *testGateway) {
	alice := g.newKey(t, "get-alice", "--management")
	bob := g.newKey(t, "get-bob", "--management")
	bodies := []string{
		`{"name":"Minimal","slug":"minimal"}`,
		wsBody(map[string]any{
			"name": "Full ✓", "slug": "full", "description": "d", "default_text_model": knownTextModel,
			"default_image_model": knownImageModel, "default_provider_sort": "exacto",
			"io_logging_api_key_ids": []any{}, "io_logging_sampling_rate": 0.0001,
			"is_data_discount_logging_enabled": false, "is_observability_broadcast_enabled": true,
			"is_observability_io_logging_enabled": true,
		}),
		`{"name":"Key ids","slug":"key-ids","io_logging_api_key_ids":["a","b","c"]}`,
		// A slug shaped like a UUID is still a slug.
		`{"name":"UUID-like","slug":"12345678-1234-1234-1234-123456789abc"}`,
	}
	var aliceIDs []string
	for _, b := range bodies {
		created, data := wsMustCreate(t, g, alice, b)
		id, slug := data["id"].(string), data["slug"].(string)
		aliceIDs = append(aliceIDs, id)
		for _, ref := range []string{id, slug} {
			got := getWS(t, g, alice, ref)
			if got.status != http.StatusOK {
				t.Errorf("GET %s = %d %s, want 200", ref, got.status, got.body)
				continue
			}
			wsData(t, got)
			if !bytes.Equal(got.body, created.body) {
				t.Errorf("GET %s =\n%s\nwant the object the 201 returned:\n%s", ref, got.body, created.body)
			}
		}
	}

	// Unknown ids and another user's workspaces are the same 404: the body
	// gives nothing away.
	notFound := getWS(t, g, bob, "00000000-0000-4000-8000-000000000000")
	wsErrorEnvelope(t, notFound, http.StatusNotFound, "Resource not found")
	refs := []string{
		"no-such-workspace",
		"0191d1c4-7a3e-7b5e-9d7c-3f1e2a4b5c6d",
		"Not_A_Slug",
		strings.Repeat("s", 51),
		"%D0%B0bc", // a Cyrillic look-alike slug
		aliceIDs[0], aliceIDs[1], "minimal", "full",
	}
	for _, ref := range refs {
		r := getWS(t, g, bob, ref)
		wsErrorEnvelope(t, r, http.StatusNotFound, "Resource not found")
		if !bytes.Equal(r.body, notFound.body) {
			t.Errorf("GET %s by another user = %s, want the plain 404 %s", ref, r.body, notFound.body)
		}
	}

	// Bob's own workspace with one of Alice's slugs is his, not hers.
	_, bobs := wsMustCreate(t, g, bob, `{"name":"Bob's minimal","slug":"minimal"}`)
	r := getWS(t, g, bob, "minimal")
	if r.status != http.StatusOK || wsData(t, r)["id"] != bobs["id"] {
		t.Errorf("GET minimal as bob = %d %s, want bob's %v", r.status, r.body, bobs["id"])
	}
	r = getWS(t, g, alice, "minimal")
	if r.status != http.StatusOK || wsData(t, r)["id"] != aliceIDs[0] {
		t.Errorf("GET minimal as alice = %d %s, want alice's %v", r.status, r.body, aliceIDs[0])
	}
	wsErrorEnvelope(t, getWS(t, g, alice, bobs["id"].(string)), http.StatusNotFound, "Resource not found")
}

func testWorkspaceDuplicateSlug(t *testing.T, g *testGateway) {
	alice := g.newKey(t, "dup-alice", "--management")
	bob := g.newKey(t, "dup-bob", "--management")
	_, first := wsMustCreate(t, g, alice, `{"name":"First","slug":"shared"}`)

	for _, body := range []string{
		`{"name":"First","slug":"shared"}`,
		`{"name":"Second","slug":"shared","description":"another"}`,
	} {
		r := createWS(t, g, alice, body)
		wsErrorEnvelope(t, r, http.StatusConflict, "")
	}
	r := getWS(t, g, alice, "shared")
	if r.status != http.StatusOK || wsData(t, r)["id"] != first["id"] || wsData(t, r)["name"] != "First" {
		t.Errorf("after the 409s, GET shared = %d %s, want the first workspace", r.status, r.body)
	}

	// Slugs are unique per user only.
	_, bobs := wsMustCreate(t, g, bob, `{"name":"Bob's","slug":"shared"}`)
	if bobs["id"] == first["id"] || bobs["created_by"] != "dup-bob" {
		t.Errorf("bob's workspace = %v, want a new one created by dup-bob", bobs)
	}
}

// wsRace sends n creates at once (released together) and returns the
// replies.
func wsRace(t *testing.T, g *testGateway, key, body string, header http.Header, n int) []wsReply {
	t.Helper()
	replies := make([]wsReply, n)
	errs := make([]error, n)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			replies[i], errs[i] = wsSend(g, http.MethodPost, workspacesPath, key, strings.NewReader(body), header)
		}()
	}
	close(start)
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
	}
	return replies
}

func testWorkspaceConcurrentSlug(t *testing.T, g *testGateway) {
	mgmt := g.newKey(t, "race-user", "--management")
	const rounds = 3 // each round races on a fresh slug
	for round := range rounds {
		slug := fmt.Sprintf("race-%d", round)
		replies := wsRace(t, g, mgmt, fmt.Sprintf(`{"name":"Race","slug":%q}`, slug),
			http.Header{"Content-Type": {"application/json"}}, concurrentCreates)
		var winner []byte
		statuses := map[int]int{}
		for _, r := range replies {
			statuses[r.status]++
			switch r.status {
			case http.StatusCreated:
				winner = r.body
			case http.StatusConflict:
				wsErrorEnvelope(t, r, http.StatusConflict, "")
			}
		}
		if statuses[http.StatusCreated] != 1 || statuses[http.StatusConflict] != concurrentCreates-1 {
			t.Fatalf("round %d: statuses %v, want exactly one 201 and %d 409s", round, statuses, concurrentCreates-1)
		}
		if got := getWS(t, g, mgmt, slug); got.status != http.StatusOK || !bytes.Equal(got.body, winner) {
			t.Errorf("round %d: GET %s = %d %s, want the winner %s", round, slug, got.status, got.body, winner)
		}
	}
}

func testWorkspaceAuth(t *testing.T, g *testGateway) {
	mgmt := g.newKey(t, "auth-user", "--management")
	ordinary := g.newKey(t, "auth-user")
	_, ws := wsMustCreate(t, g, mgmt, `{"name":"Auth","slug":"auth"}`)
	id := ws["id"].(string)

	type call struct {
		name, method, path, body string
	}
	calls := []call{
		{"create", http.MethodPost, workspacesPath, `{"name":"New","slug":"new-one"}`},
		{"create invalid body", http.MethodPost, workspacesPath, `{"name":""}`},
		{"get by id", http.MethodGet, workspacesPath + "/" + id, ""},
		{"get by slug", http.MethodGet, workspacesPath + "/auth", ""},
		{"get default", http.MethodGet, workspacesPath + "/default", ""},
		{"get unknown", http.MethodGet, workspacesPath + "/nothing-here", ""},
	}
	jsonCT := http.Header{"Content-Type": {"application/json"}}
	for _, c := range calls {
		t.Run(c.name, func(t *testing.T) {
			var body io.Reader
			if c.body != "" {
				body = strings.NewReader(c.body)
			}
			r, err := wsSend(g, c.method, c.path, ordinary, body, jsonCT)
			if err != nil {
				t.Fatal(err)
			}
			wsErrorEnvelope(t, r, http.StatusForbidden, "Only management keys can perform this operation")

			if c.body != "" {
				body = strings.NewReader(c.body)
			}
			r, err = wsSend(g, c.method, c.path, "", body, jsonCT)
			if err != nil {
				t.Fatal(err)
			}
			wsErrorEnvelope(t, r, http.StatusUnauthorized, "Missing Authentication header")

			if c.body != "" {
				body = strings.NewReader(c.body)
			}
			r, err = wsSend(g, c.method, c.path, "sk-gw-not-a-real-key", body, jsonCT)
			if err != nil {
				t.Fatal(err)
			}
			wsErrorEnvelope(t, r, http.StatusUnauthorized, "")
		})
	}
	// The refused create made nothing.
	if r := getWS(t, g, mgmt, "new-one"); r.status != http.StatusNotFound {
		t.Errorf("GET new-one = %d, want 404: a refused create must not create", r.status)
	}
}

func testWorkspaceIdempotency(t *testing.T, g *testGateway) {
	alice := g.newKey(t, "idem-alice", "--management")
	bob := g.newKey(t, "idem-bob", "--management")
	const key = "retry-0001"
	body := `{"name":"Idem","slug":"idem","description":"once","io_logging_sampling_rate":0.5}`
	first, data := wsMustCreate(t, g, alice, body, "Idempotency-Key", key)
	if first.header.Get("Idempotent-Replayed") != "" {
		t.Errorf("first answer has Idempotent-Replayed %q", first.header.Get("Idempotent-Replayed"))
	}

	retries := []struct{ name, body string }{
		{"same bytes", body},
		{"other whitespace", "{\n  \"name\": \"Idem\",\n  \"slug\": \"idem\",\n  \"description\": \"once\",\n  \"io_logging_sampling_rate\": 0.5\n}\n"},
		{"other key order", `{"io_logging_sampling_rate":0.5,"description":"once","slug":"idem","name":"Idem"}`},
		{"same number written differently", `{"name":"Idem","slug":"idem","description":"once","io_logging_sampling_rate":5e-1}`},
	}
	for _, rt := range retries {
		t.Run("retry "+rt.name, func(t *testing.T) {
			r := createWS(t, g, alice, rt.body, "Idempotency-Key", key)
			if r.status != http.StatusCreated || !bytes.Equal(r.body, first.body) {
				t.Fatalf("retry = %d %s\nwant 201 and the original body %s", r.status, r.body, first.body)
			}
			if r.header.Get("Idempotent-Replayed") != "true" {
				t.Errorf("replay lacks Idempotent-Replayed: true")
			}
		})
	}

	// The same key with another request is refused and creates nothing.
	for _, other := range []string{
		`{"name":"Idem","slug":"idem-other"}`,
		`{"name":"Idem","slug":"idem","description":"twice","io_logging_sampling_rate":0.5}`,
		`{"name":"Idem","slug":"idem","description":"once"}`,
	} {
		r := createWS(t, g, alice, other, "Idempotency-Key", key)
		wsErrorEnvelope(t, r, http.StatusUnprocessableEntity, "")
	}
	if r := getWS(t, g, alice, "idem-other"); r.status != http.StatusNotFound {
		t.Errorf("GET idem-other = %d, want 404: a mismatched retry must not create", r.status)
	}
	// Nothing but the original exists under the slug.
	if r := getWS(t, g, alice, "idem"); r.status != http.StatusOK || !bytes.Equal(r.body, first.body) {
		t.Errorf("GET idem = %d %s, want the original %s", r.status, r.body, first.body)
	}
	// Without the key the same body is a fresh request: the slug is taken.
	wsErrorEnvelope(t, createWS(t, g, alice, body), http.StatusConflict, "")
	// A new key is a new request.
	_, fresh := wsMustCreate(t, g, alice, `{"name":"Idem 2","slug":"idem-2"}`, "Idempotency-Key", "retry-0002")
	if fresh["id"] == data["id"] {
		t.Error("a new Idempotency-Key replayed the old workspace")
	}

	// Keys are per user: Bob's use of Alice's key is his own request.
	bobFirst, bobData := wsMustCreate(t, g, bob, body, "Idempotency-Key", key)
	if bobData["id"] == data["id"] || bobData["created_by"] != "idem-bob" || bobFirst.header.Get("Idempotent-Replayed") != "" {
		t.Errorf("bob's create with alice's key = %s, want a new workspace of idem-bob", bobFirst.body)
	}
	r := createWS(t, g, bob, body, "Idempotency-Key", key)
	if r.status != http.StatusCreated || !bytes.Equal(r.body, bobFirst.body) {
		t.Errorf("bob's retry = %d %s, want his own original %s", r.status, r.body, bobFirst.body)
	}
	// And Bob's different body under the key does not disturb Alice's record.
	_, _ = wsMustCreate(t, g, bob, `{"name":"x","slug":"bob-other"}`, "Idempotency-Key", "bob-only")
	r = createWS(t, g, alice, body, "Idempotency-Key", key)
	if r.status != http.StatusCreated || !bytes.Equal(r.body, first.body) {
		t.Errorf("alice's retry after bob's = %d %s, want %s", r.status, r.body, first.body)
	}

	// A request refused as invalid records nothing under its key.
	wsErrorEnvelope(t, createWS(t, g, alice, `{"name":"","slug":"later"}`, "Idempotency-Key", "after-400"), http.StatusBadRequest, "")
	wsMustCreate(t, g, alice, `{"name":"Later","slug":"later"}`, "Idempotency-Key", "after-400")
}

func testWorkspaceIdempotencyConcurrent(t *testing.T, g *testGateway) {
	mgmt := g.newKey(t, "idem-race-user", "--management")
	h := http.Header{"Content-Type": {"application/json"}, "Idempotency-Key": {"race-key"}}
	body := `{"name":"Idem race","slug":"idem-race"}`
	replies := wsRace(t, g, mgmt, body, h, concurrentCreates)
	var original []byte
	replayed := 0
	for i, r := range replies {
		if r.status != http.StatusCreated {
			t.Fatalf("request %d = %d %s, want every answer 201", i, r.status, r.body)
		}
		if r.header.Get("Idempotent-Replayed") == "true" {
			replayed++
		} else {
			original = r.body
		}
	}
	if replayed != concurrentCreates-1 || original == nil {
		t.Fatalf("%d answers were replays, want all but one (%d)", replayed, concurrentCreates-1)
	}
	for i, r := range replies {
		if !bytes.Equal(r.body, original) {
			t.Errorf("request %d body %s differs from the original %s", i, r.body, original)
		}
	}
	// Exactly one workspace exists, the one answered.
	if r := getWS(t, g, mgmt, "idem-race"); r.status != http.StatusOK || !bytes.Equal(r.body, original) {
		t.Errorf("GET idem-race = %d %s, want %s", r.status, r.body, original)
	}
	// The same slug under a different key is now a conflict, not a replay.
	wsErrorEnvelope(t, createWS(t, g, mgmt, body, "Idempotency-Key", "race-key-2"), http.StatusConflict, "")
}

func testWorkspaceIdempotencyKeyHeader(t *testing.T, g *testGateway) {
	mgmt := g.newKey(t, "idem-header-user", "--management")
	cases := []struct {
		name, key string
		status    int
	}{
		{"one char", "k", http.StatusCreated},
		{"255 printable ASCII", strings.Repeat("K", 255), http.StatusCreated},
		{"uuid", "1f0c3e9a-8f7e-4c1a-9e55-2d7b3f4a6c8e", http.StatusCreated},
		{"punctuation", "a!~#$%&'*+-.^_`|~:/=?", http.StatusCreated},
		{"256 chars", strings.Repeat("K", 256), http.StatusBadRequest},
		{"non-ASCII", "clé-1", http.StatusBadRequest},
		{"non-ASCII only", "ключ", http.StatusBadRequest},
		{"tab inside", "a\tb", http.StatusBadRequest},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			slug := fmt.Sprintf("idem-header-%d", i)
			r := createWS(t, g, mgmt, fmt.Sprintf(`{"name":"n","slug":%q}`, slug), "Idempotency-Key", tc.key)
			if tc.status == http.StatusCreated {
				if r.status != http.StatusCreated {
					t.Fatalf("status = %d %s, want 201", r.status, r.body)
				}
				return
			}
			meta := wsErrorEnvelope(t, r, http.StatusBadRequest, "Invalid request parameters")
			if got := wsOffendingFields(t, meta); !reflect.DeepEqual(got, []string{"idempotency_key"}) {
				t.Errorf("metadata names %v, want [idempotency_key]", got)
			}
			if got := getWS(t, g, mgmt, slug); got.status != http.StatusNotFound {
				t.Errorf("GET %s = %d, want 404 after a refused key", slug, got.status)
			}
		})
	}
}

// wsOfNewKey creates a standard key for user and returns the workspace id
// `keys create` reports for it.
func wsOfNewKey(t *testing.T, g *testGateway, user string, extra ...string) string {
	t.Helper()
	out, err := g.cli(t, "", append([]string{"keys", "create", "--name", "std", "--user", user}, extra...)...)
	if err != nil {
		t.Fatalf("keys create: %v", err)
	}
	for _, line := range strings.Split(out, "\n") {
		if id, ok := strings.CutPrefix(line, "workspace: "); ok {
			return id
		}
	}
	t.Fatalf("keys create printed no workspace line:\n%s", out)
	return ""
}

func testWorkspaceDefault(t *testing.T, g *testGateway) {
	const user = "default-user"
	mgmt := g.newKey(t, user, "--management")
	wsID := wsOfNewKey(t, g, user)

	r := getWS(t, g, mgmt, "default")
	if r.status != http.StatusOK {
		t.Fatalf("GET default = %d %s, want 200", r.status, r.body)
	}
	data := wsData(t, r)
	if data["id"] != wsID || data["slug"] != "default" || data["created_by"] != user {
		t.Errorf("default workspace = %s, want id %s, slug default, created_by %s", r.body, wsID, user)
	}
	byID := getWS(t, g, mgmt, wsID)
	if byID.status != http.StatusOK || !bytes.Equal(byID.body, r.body) {
		t.Errorf("GET %s = %d %s, want %s", wsID, byID.status, byID.body, r.body)
	}
	// Later keys share it; it is made once.
	if again := wsOfNewKey(t, g, user); again != wsID {
		t.Errorf("second standard key's workspace = %s, want the default %s", again, wsID)
	}
	// The slug is taken like any other.
	wsErrorEnvelope(t, createWS(t, g, mgmt, `{"name":"Mine","slug":"default"}`), http.StatusConflict, "")
	// A key may be put in another workspace by slug or id.
	_, team := wsMustCreate(t, g, mgmt, `{"name":"Team","slug":"team"}`)
	if got := wsOfNewKey(t, g, user, "--workspace", "team"); got != team["id"] {
		t.Errorf("--workspace team gave workspace %s, want %v", got, team["id"])
	}
	if got := wsOfNewKey(t, g, user, "--workspace", team["id"].(string)); got != team["id"] {
		t.Errorf("--workspace <id> gave workspace %s, want %v", got, team["id"])
	}

	// A management key's user has the default from that key on: it may be
	// renamed, and keys made later act in it.
	const early = "early-default-user"
	earlyMgmt := g.newKey(t, early, "--management")
	wsErrorEnvelope(t, createWS(t, g, earlyMgmt, `{"name":"My default","slug":"default"}`), http.StatusConflict, "")
	renamed := patchWS(t, g, earlyMgmt, "default", `{"name":"My default"}`)
	if renamed.status != http.StatusOK {
		t.Fatalf("rename the default = %d %s", renamed.status, renamed.body)
	}
	own := getWS(t, g, earlyMgmt, "default")
	var ownBody struct {
		Data struct{ ID, Name string } `json:"data"`
	}
	if err := json.Unmarshal(own.body, &ownBody); err != nil || ownBody.Data.Name != "My default" {
		t.Fatalf("GET default = %d %s", own.status, own.body)
	}
	if got := wsOfNewKey(t, g, early); got != ownBody.Data.ID {
		t.Errorf("standard key's workspace = %s, want the user's renamed default %s", got, ownBody.Data.ID)
	}

	// Standard keys made at once for a new user agree on one default.
	const racer = "default-race-user"
	const racers = 4
	ids := make([]string, racers)
	errs := make([]error, racers)
	var wg sync.WaitGroup
	for i := range racers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			out, err := g.cli(t, "", "keys", "create", "--name", "std", "--user", racer)
			errs[i] = err
			for _, line := range strings.Split(out, "\n") {
				if id, ok := strings.CutPrefix(line, "workspace: "); ok {
					ids[i] = id
				}
			}
		}()
	}
	wg.Wait()
	for i := range racers {
		if errs[i] != nil || ids[i] == "" || ids[i] != ids[0] {
			t.Errorf("concurrent key %d: workspace %q, err %v; want all in one default workspace (%q)", i, ids[i], errs[i], ids[0])
		}
	}
	racerMgmt := g.newKey(t, racer, "--management")
	if r := getWS(t, g, racerMgmt, "default"); r.status != http.StatusOK || wsData(t, r)["id"] != ids[0] {
		t.Errorf("GET default of %s = %d %s, want %s", racer, r.status, r.body, ids[0])
	}

	// Another user's default is not visible.
	other := g.newKey(t, "default-other-user", "--management")
	if r := getWS(t, g, other, wsID); r.status != http.StatusNotFound {
		t.Errorf("another user's GET of %s = %d, want 404", wsID, r.status)
	}
	if r := getWS(t, g, other, "default"); r.status == http.StatusOK && wsData(t, r)["id"] == wsID {
		t.Errorf("another user's GET default returned %s's default workspace", user)
	}
}

// TestWorkspaceChanges is the black-box suite of listing, updating and
// deleting workspaces (spec/resources.md), once per metadata store.
func TestWorkspaceChanges(t *testing.T) {
	t.Parallel() // a gateway and database of its own
	for _, sc := range metadataStores() {
		t.Run(sc.name, func(t *testing.T) {
			g := startWorkspaceGateway(t, sc)

			t.Run("List", func(t *testing.T) { testWorkspaceList(t, g) })
			t.Run("ListParameters", func(t *testing.T) { testWorkspaceListParameters(t, g) })
			t.Run("Update", func(t *testing.T) { testWorkspaceUpdate(t, g) })
			t.Run("UpdateValidation", func(t *testing.T) { testWorkspaceUpdateValidation(t, g) })
			t.Run("UpdateIdempotency", func(t *testing.T) { testWorkspaceUpdateIdempotency(t, g) })
			t.Run("UpdateConcurrent", func(t *testing.T) { testWorkspaceUpdateConcurrent(t, g) })
			t.Run("Delete", func(t *testing.T) { testWorkspaceDelete(t, g) })
			t.Run("DeleteRefused", func(t *testing.T) { testWorkspaceDeleteRefused(t, g) })
			t.Run("ChangesAuth", func(t *testing.T) { testWorkspaceChangesAuth(t, g) })
		})
	}
}

// patchWS sends a PATCH with extra headers (name, value pairs).
func patchWS(t *testing.T, g *testGateway, key, idOrSlug, body string, hdr ...string) wsReply {
	t.Helper()
	h := http.Header{"Content-Type": {"application/json"}}
	for i := 0; i+1 < len(hdr); i += 2 {
		h[http.CanonicalHeaderKey(hdr[i])] = []string{hdr[i+1]}
	}
	r, err := wsSend(g, http.MethodPatch, workspacesPath+"/"+idOrSlug, key, strings.NewReader(body), h)
	if err != nil {
		t.Fatalf("PATCH workspace %q: %v", idOrSlug, err)
	}
	return r
}

func deleteWS(t *testing.T, g *testGateway, key, idOrSlug string) wsReply {
	t.Helper()
	r, err := wsSend(g, http.MethodDelete, workspacesPath+"/"+idOrSlug, key, nil, nil)
	if err != nil {
		t.Fatalf("DELETE workspace %q: %v", idOrSlug, err)
	}
	return r
}

func listWS(t *testing.T, g *testGateway, key, query string) wsReply {
	t.Helper()
	path := workspacesPath
	if query != "" {
		path += "?" + query
	}
	r, err := wsSend(g, http.MethodGet, path, key, nil, nil)
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	return r
}

// wsList decodes {"data":[Workspace…],"total_count":N} strictly and returns
// the slugs in order and the total.
func wsList(t *testing.T, r wsReply) (slugs []string, total int) {
	t.Helper()
	if r.status != http.StatusOK {
		t.Fatalf("list = %d %s, want 200", r.status, r.body)
	}
	var page struct {
		Data       []map[string]any `json:"data"`
		TotalCount *int             `json:"total_count"`
	}
	dec := json.NewDecoder(bytes.NewReader(r.body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&page); err != nil || page.Data == nil || page.TotalCount == nil {
		t.Fatalf("list body %s is not {data: [...], total_count: N} (%v)", r.body, err)
	}
	slugs = []string{}
	for _, w := range page.Data {
		wsCheckShape(t, w)
		slugs = append(slugs, w["slug"].(string))
	}
	return slugs, *page.TotalCount
}

func testWorkspaceList(t *testing.T, g *testGateway) {
	mgmt := g.newKey(t, "list-user", "--management")
	// A new user's list holds the default workspace, made with the first
	// key: every key acts in it, so no list is ever without it.
	if slugs, total := wsList(t, listWS(t, g, mgmt, "")); !reflect.DeepEqual(slugs, []string{"default"}) || total != 1 {
		t.Fatalf("a new user's list = %v (total %d), want [default]", slugs, total)
	}
	want := []string{"default"}
	for i := range 5 {
		slug := fmt.Sprintf("list-%d", i)
		wsMustCreate(t, g, mgmt, wsBody(map[string]any{"name": "L", "slug": slug}))
		want = append(want, slug)
	}
	other := g.newKey(t, "list-other-user", "--management")
	wsMustCreate(t, g, other, `{"name":"Not yours","slug":"list-0"}`)

	if slugs, total := wsList(t, listWS(t, g, mgmt, "")); !reflect.DeepEqual(slugs, want) || total != 6 {
		t.Errorf("list = %v (total %d), want %v (total 6) in creation order", slugs, total, want)
	}
	pages := []struct {
		query string
		want  []string
	}{
		{"limit=2", want[:2]},
		{"offset=2&limit=2", want[2:4]},
		{"offset=4&limit=2", want[4:]},
		{"offset=6", []string{}},
		{"offset=1000&limit=100", []string{}},
		{"limit=100&offset=0", want},
	}
	for _, p := range pages {
		slugs, total := wsList(t, listWS(t, g, mgmt, p.query))
		if !reflect.DeepEqual(slugs, p.want) || total != 6 {
			t.Errorf("list?%s = %v (total %d), want %v (total 6)", p.query, slugs, total, p.want)
		}
	}
	// What the list shows is what GET shows.
	r := listWS(t, g, mgmt, "offset=1&limit=1")
	var page struct {
		Data []json.RawMessage `json:"data"`
	}
	if err := json.Unmarshal(r.body, &page); err != nil || len(page.Data) != 1 {
		t.Fatalf("list body %s", r.body)
	}
	if got := getWS(t, g, mgmt, "list-0"); !bytes.Equal(got.body, []byte(`{"data":`+string(page.Data[0])+`}`)) {
		t.Errorf("GET list-0 = %s\nlist entry %s", got.body, page.Data[0])
	}
}

func testWorkspaceListParameters(t *testing.T, g *testGateway) {
	mgmt := g.newKey(t, "list-param-user", "--management")
	for _, tc := range []struct {
		query  string
		fields []string
	}{
		{"limit=0", []string{"limit"}},
		{"limit=101", []string{"limit"}},
		{"limit=-1", []string{"limit"}},
		{"limit=ten", []string{"limit"}},
		{"limit=", []string{"limit"}},
		{"limit=1.5", []string{"limit"}},
		{"limit=1&limit=2", []string{"limit"}},
		{"offset=-1", []string{"offset"}},
		{"offset=x", []string{"offset"}},
		{"offset=99999999999999999999999", []string{"offset"}},
		{"offset=-1&limit=0", []string{"limit", "offset"}},
	} {
		t.Run(tc.query, func(t *testing.T) {
			meta := wsErrorEnvelope(t, listWS(t, g, mgmt, tc.query), http.StatusBadRequest, "Invalid request parameters")
			if got := wsOffendingFields(t, meta); !reflect.DeepEqual(got, tc.fields) {
				t.Errorf("metadata names %v, want %v", got, tc.fields)
			}
		})
	}
	for _, q := range []string{"limit=1", "limit=100", "offset=0", "order=desc"} {
		if r := listWS(t, g, mgmt, q); r.status != http.StatusOK {
			t.Errorf("list?%s = %d %s, want 200", q, r.status, r.body)
		}
	}
}

func testWorkspaceUpdate(t *testing.T, g *testGateway) {
	mgmt := g.newKey(t, "update-user", "--management")
	created, data := wsMustCreate(t, g, mgmt, `{"name":"Before","slug":"before","description":"d",
		"default_text_model":"`+knownTextModel+`","default_provider_sort":"price","io_logging_api_key_ids":["k"]}`)
	id := data["id"].(string)

	// {} is a no-op: the same workspace, updated_at still null.
	if r := patchWS(t, g, mgmt, id, `{}`); r.status != http.StatusOK || !bytes.Equal(r.body, created.body) {
		t.Errorf("PATCH {} = %d %s\nwant 200 %s", r.status, r.body, created.body)
	}

	before := time.Now().UTC().Add(-time.Second)
	r := patchWS(t, g, mgmt, "before", `{"name":"After","slug":"after","description":null,"default_text_model":null,
		"default_provider_sort":null,"io_logging_api_key_ids":null,"is_observability_broadcast_enabled":true}`)
	if r.status != http.StatusOK {
		t.Fatalf("PATCH = %d %s, want 200", r.status, r.body)
	}
	after := wsData(t, r)
	for field, want := range map[string]any{
		"id": id, "name": "After", "slug": "after", "description": "", "default_text_model": nil,
		"default_provider_sort": nil, "io_logging_api_key_ids": nil, "is_observability_broadcast_enabled": true,
		"created_at": data["created_at"], "default_guardrail_id": data["default_guardrail_id"],
		"io_logging_sampling_rate": 1.0, "is_data_discount_logging_enabled": true,
	} {
		if !reflect.DeepEqual(after[field], want) {
			t.Errorf("%s = %#v, want %#v", field, after[field], want)
		}
	}
	updated, err := time.Parse(time.RFC3339Nano, fmt.Sprint(after["updated_at"]))
	if err != nil || updated.Before(before) || updated.After(time.Now().Add(time.Second)) {
		t.Errorf("updated_at = %v, want the time of the update", after["updated_at"])
	}
	// Stored as answered, on both read paths; the old slug is gone and free.
	for _, ref := range []string{id, "after"} {
		if got := getWS(t, g, mgmt, ref); got.status != http.StatusOK || !bytes.Equal(got.body, r.body) {
			t.Errorf("GET %s = %d %s\nwant %s", ref, got.status, got.body, r.body)
		}
	}
	wsErrorEnvelope(t, getWS(t, g, mgmt, "before"), http.StatusNotFound, "Resource not found")
	wsMustCreate(t, g, mgmt, `{"name":"Reuse","slug":"before"}`)

	// A slug of another of the user's workspaces: 409, nothing changed.
	wsErrorEnvelope(t, patchWS(t, g, mgmt, id, `{"slug":"before","name":"Lost"}`), http.StatusConflict, "Resource already exists")
	if got := wsData(t, getWS(t, g, mgmt, id)); got["slug"] != "after" || got["name"] != "After" {
		t.Errorf("a refused PATCH changed the workspace: %v", got)
	}
	// Another user may hold the slug.
	other := g.newKey(t, "update-other-user", "--management")
	wsMustCreate(t, g, other, `{"name":"Theirs","slug":"theirs"}`)
	if r := patchWS(t, g, mgmt, id, `{"slug":"theirs"}`); r.status != http.StatusOK {
		t.Errorf("PATCH to a slug another user holds = %d %s, want 200", r.status, r.body)
	}
	wsErrorEnvelope(t, patchWS(t, g, mgmt, "no-such-workspace", `{}`), http.StatusNotFound, "Resource not found")

	// The default workspace keeps its slug (Default finds it by it).
	wsOfNewKey(t, g, "update-user")
	meta := wsErrorEnvelope(t, patchWS(t, g, mgmt, "default", `{"slug":"main"}`), http.StatusBadRequest, "Invalid request parameters")
	if got := wsFieldNames(meta); !reflect.DeepEqual(got, []string{"slug"}) {
		t.Errorf("metadata names %v, want [slug]", got)
	}
	if r := patchWS(t, g, mgmt, "default", `{"name":"Main"}`); r.status != http.StatusOK || wsData(t, r)["slug"] != "default" {
		t.Errorf("renaming the default's name = %d %s", r.status, r.body)
	}
}

// wsFieldNames lists the fields of metadata.fields, sorted.
func wsFieldNames(meta map[string]any) []string {
	fields, _ := meta["fields"].(map[string]any)
	var names []string
	for k := range fields {
		names = append(names, k)
	}
	return wsSorted(names)
}

// testWorkspaceUpdateValidation sends every creation case that names both
// name and slug as a PATCH: each present field is judged exactly as on
// creation. Cases about absent required fields do not apply to a partial
// update.
func testWorkspaceUpdateValidation(t *testing.T, g *testGateway) {
	mgmt := g.newKey(t, "update-validation-user", "--management")
	_, data := wsMustCreate(t, g, mgmt, `{"name":"Target","slug":"target"}`)
	id := data["id"].(string)
	ran := 0
	for i, tc := range workspaceValidationCases() {
		slug := fmt.Sprintf("pv-%d", i)
		body := tc.body(slug)
		var doc map[string]json.RawMessage
		if json.Unmarshal([]byte(body), &doc) == nil && (doc["name"] == nil || doc["slug"] == nil) {
			continue // about required fields, or a case-folded spelling of one
		}
		ran++
		t.Run(tc.name, func(t *testing.T) {
			h := http.Header{"Content-Type": {"application/json"}}
			if tc.contentType != "" {
				h.Set("Content-Type", tc.contentType)
			}
			r, err := wsSend(g, http.MethodPatch, workspacesPath+"/"+id, mgmt, strings.NewReader(body), h)
			if err != nil {
				t.Fatal(err)
			}
			if tc.status == http.StatusCreated {
				if r.status != http.StatusOK {
					t.Fatalf("PATCH %s = %d %s, want 200", body, r.status, r.body)
				}
				if tc.check != nil {
					tc.check(t, wsData(t, r))
				}
				return
			}
			meta := wsErrorEnvelope(t, r, tc.status, "")
			got := wsOffendingFields(t, meta)
			if !reflect.DeepEqual(got, wsSorted(tc.fields)) && (tc.orFields == nil || !reflect.DeepEqual(got, wsSorted(tc.orFields))) {
				t.Errorf("PATCH %s names %v, want %v", body, got, tc.fields)
			}
		})
	}
	if ran < 100 {
		t.Errorf("only %d creation cases applied to PATCH", ran)
	}
	// Null name or slug: 400, unlike the nullable fields.
	meta := wsErrorEnvelope(t, patchWS(t, g, mgmt, id, `{"name":null,"slug":null}`), http.StatusBadRequest, "")
	if got := wsOffendingFields(t, meta); !reflect.DeepEqual(got, []string{"name", "slug"}) {
		t.Errorf("null name and slug name %v", got)
	}
}

func testWorkspaceUpdateIdempotency(t *testing.T, g *testGateway) {
	mgmt := g.newKey(t, "update-idem-user", "--management")
	wsMustCreate(t, g, mgmt, `{"name":"Idem","slug":"up-old"}`)
	first := patchWS(t, g, mgmt, "up-old", `{"slug":"up-new","description":"once"}`, "Idempotency-Key", "patch-1")
	if first.status != http.StatusOK || first.header.Get("Idempotent-Replayed") != "" {
		t.Fatalf("first PATCH = %d %s", first.status, first.body)
	}
	// The retry still names the old slug; it gets the first answer.
	again := patchWS(t, g, mgmt, "up-old", `{"description":"once","slug":"up-new"}`, "Idempotency-Key", "patch-1")
	if again.status != http.StatusOK || !bytes.Equal(again.body, first.body) || again.header.Get("Idempotent-Replayed") != "true" {
		t.Errorf("retry = %d %s (replayed %q)\nwant 200 %s", again.status, again.body, again.header.Get("Idempotent-Replayed"), first.body)
	}
	wsErrorEnvelope(t, patchWS(t, g, mgmt, "up-old", `{"description":"twice"}`, "Idempotency-Key", "patch-1"),
		http.StatusUnprocessableEntity, "")
	// A creation's key and an update's key are separate records.
	created := createWS(t, g, mgmt, `{"name":"C","slug":"up-created"}`, "Idempotency-Key", "patch-1")
	if created.status != http.StatusCreated || created.header.Get("Idempotent-Replayed") != "" {
		t.Errorf("create with a PATCH's key = %d %s, want a fresh 201", created.status, created.body)
	}
	if r := patchWS(t, g, mgmt, "up-created", `{"name":"C2"}`, "Idempotency-Key", "patch-1"); r.status != http.StatusUnprocessableEntity {
		t.Errorf("the PATCH key on another workspace = %d %s, want 422", r.status, r.body)
	}
	wsErrorEnvelope(t, patchWS(t, g, mgmt, "up-new", `{}`, "Idempotency-Key", strings.Repeat("k", 256)), http.StatusBadRequest, "")
}

// testWorkspaceUpdateConcurrent: PATCHes of different fields sent at once
// all land.
func testWorkspaceUpdateConcurrent(t *testing.T, g *testGateway) {
	c := g.newClient(t, g.newKey(t, "update-race-user", "--management"))
	ctx := context.Background()
	w, err := c.CreateWorkspace(ctx, client.WorkspaceCreate{Name: "Race", Slug: "race"})
	if err != nil {
		t.Fatal(err)
	}
	updates := []client.WorkspaceUpdate{
		{Name: client.Set("Raced")},
		{Description: client.Set("raced")},
		{IOLoggingSamplingRate: client.Set(0.5)},
		{IsObservabilityIOLoggingEnabled: client.Set(true)},
		{DefaultProviderSort: client.Set("throughput")},
		{IOLoggingAPIKeyIDs: client.Set([]string{"a"})},
	}
	errs := make([]error, len(updates))
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i, u := range updates {
		wg.Go(func() {
			<-start
			_, errs[i] = c.UpdateWorkspace(ctx, w.ID, u)
		})
	}
	close(start)
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("update %d: %v", i, err)
		}
	}
	got, err := c.GetWorkspace(ctx, w.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.Name != "Raced" || got.Description != "raced" || got.IOLoggingSamplingRate != 0.5 ||
		!got.IsObservabilityIOLoggingEnabled || got.DefaultProviderSort == nil || *got.DefaultProviderSort != "throughput" ||
		!reflect.DeepEqual(got.IOLoggingAPIKeyIDs, []string{"a"}) {
		t.Errorf("after concurrent updates %+v: an update was lost", got)
	}
}

func testWorkspaceDelete(t *testing.T, g *testGateway) {
	c := g.newClient(t, g.newKey(t, "delete-user", "--management"))
	ctx := context.Background()
	doomed, err := c.CreateWorkspace(ctx, client.WorkspaceCreate{Name: "Doomed", Slug: "doomed"})
	if err != nil {
		t.Fatal(err)
	}
	kept, err := c.CreateWorkspace(ctx, client.WorkspaceCreate{Name: "Kept", Slug: "kept"})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.DeleteWorkspace(ctx, "doomed"); err != nil {
		t.Fatal(err)
	}
	for _, ref := range []string{doomed.ID, "doomed"} {
		_, err := c.GetWorkspace(ctx, ref)
		apiError(t, err, http.StatusNotFound)
		apiError(t, c.DeleteWorkspace(ctx, ref), http.StatusNotFound)
		_, err = c.UpdateWorkspace(ctx, ref, client.WorkspaceUpdate{})
		apiError(t, err, http.StatusNotFound)
	}
	page, err := c.ListWorkspaces(ctx, 0, 50)
	if err != nil || page.Total != 2 || len(page.Workspaces) != 2 || page.Workspaces[0].Slug != "default" || page.Workspaces[1].Slug != "kept" {
		t.Errorf("list after delete = %+v, %v; want [default kept]", page, err)
	}
	again, err := c.CreateWorkspace(ctx, client.WorkspaceCreate{Name: "Doomed again", Slug: "doomed"})
	if err != nil {
		t.Fatal(err)
	}
	if again.ID == doomed.ID {
		t.Error("the reused slug got the deleted workspace's id")
	}
	if err := c.DeleteWorkspace(ctx, kept.ID); err != nil {
		t.Errorf("delete by id: %v", err)
	}
}

func testWorkspaceDeleteRefused(t *testing.T, g *testGateway) {
	const user = "delete-refused-user"
	mgmt := g.newKey(t, user, "--management")
	wsOfNewKey(t, g, user) // makes the default workspace

	wantRefused := func(t *testing.T, ref string, want map[string]any) {
		t.Helper()
		before := getWS(t, g, mgmt, ref)
		meta := wsErrorEnvelope(t, deleteWS(t, g, mgmt, ref), http.StatusBadRequest, "Invalid request parameters")
		for k, v := range want {
			if fmt.Sprint(meta[k]) != fmt.Sprint(v) {
				t.Errorf("metadata %s = %v, want %v (metadata %v)", k, meta[k], v, meta)
			}
		}
		if after := getWS(t, g, mgmt, ref); after.status != http.StatusOK || !bytes.Equal(after.body, before.body) {
			t.Errorf("a refused DELETE changed %s: %d %s", ref, after.status, after.body)
		}
	}
	t.Run("default", func(t *testing.T) { wantRefused(t, "default", map[string]any{"default": true}) })

	t.Run("ordinary key", func(t *testing.T) {
		wsMustCreate(t, g, mgmt, `{"name":"Keyed","slug":"keyed"}`)
		wsOfNewKey(t, g, user, "--workspace", "keyed")
		wantRefused(t, "keyed", map[string]any{"files": 0, "keys": 1})
	})

	t.Run("file", func(t *testing.T) {
		_, data := wsMustCreate(t, g, mgmt, `{"name":"Filed","slug":"filed"}`)
		content := "hello, workspace"
		_, err := g.newClient(t, mgmt).UploadFile(context.Background(),
			client.Upload{Filename: "notes.txt", Content: strings.NewReader(content), Size: int64(len(content))},
			client.InWorkspace(data["id"].(string)))
		if err != nil {
			t.Fatalf("upload: %v", err)
		}
		wantRefused(t, "filed", map[string]any{"files": 1, "keys": 0})
	})
}

func testWorkspaceChangesAuth(t *testing.T, g *testGateway) {
	const user = "changes-auth-user"
	mgmt := g.newKey(t, user, "--management")
	_, data := wsMustCreate(t, g, mgmt, `{"name":"Mine","slug":"mine"}`)
	id := data["id"].(string)
	ordinary := g.newKey(t, user)
	stranger := g.newKey(t, "changes-auth-stranger", "--management")

	requests := []struct {
		name string
		send func(key string) wsReply
	}{
		{"list", func(key string) wsReply { return listWS(t, g, key, "") }},
		{"patch", func(key string) wsReply { return patchWS(t, g, key, id, `{"name":"Taken over"}`) }},
		{"delete", func(key string) wsReply { return deleteWS(t, g, key, id) }},
	}
	for _, rq := range requests {
		t.Run(rq.name, func(t *testing.T) {
			wsErrorEnvelope(t, rq.send(""), http.StatusUnauthorized, "Missing Authentication header")
			wsErrorEnvelope(t, rq.send(ordinary), http.StatusForbidden, "Only management keys can perform this operation")
			if rq.name == "list" {
				if slugs, _ := wsList(t, rq.send(stranger)); !reflect.DeepEqual(slugs, []string{"default"}) {
					t.Errorf("a stranger's list shows %v, want only their own default", slugs)
				}
				return
			}
			wsErrorEnvelope(t, rq.send(stranger), http.StatusNotFound, "Resource not found")
		})
	}
	// The slug too is unknown to the stranger.
	wsErrorEnvelope(t, patchWS(t, g, stranger, "mine", `{}`), http.StatusNotFound, "Resource not found")
	wsErrorEnvelope(t, deleteWS(t, g, stranger, "mine"), http.StatusNotFound, "Resource not found")
	if got := getWS(t, g, mgmt, id); got.status != http.StatusOK || wsData(t, got)["name"] != "Mine" {
		t.Errorf("after refused requests: %d %s", got.status, got.body)
	}
}
