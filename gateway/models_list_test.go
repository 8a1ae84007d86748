package gateway

import (
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/aigateway/gateway/policy/keys"
)

type listAnswer struct {
	Object string           `json:"object"`
	Data   []map[string]any `json:"data"`
	Links  struct {
		Next *string `json:"next"`
	} `json:"links"`
	Total int `json:"total_count"`
}

func TestModelListQueries(t *testing.T) {
	t.Parallel() // the shipped catalog, read-only: runs beside the others
	api, _ := newTestAPI(t, Options{Catalog: shippedCatalog(t)})
	h := api.Handler()
	get := func(path string, header ...string) (int, listAnswer, http.Header) {
		t.Helper()
		req := newGet(path, "standard")
		for i := 0; i+1 < len(header); i += 2 {
			req.Header.Set(header[i], header[i+1])
		}
		rec := serve(h, req)
		var a listAnswer
		if rec.Code == http.StatusOK {
			if err := json.Unmarshal(rec.Body.Bytes(), &a); err != nil {
				t.Fatalf("%s: %v", path, err)
			}
		}
		return rec.Code, a, rec.Header()
	}

	code, def, hdr := get(apiPrefix + "/models")
	if code != 200 || def.Total == 0 || len(def.Data) != def.Total || def.Links.Next != nil || hdr.Get("Etag") == "" {
		t.Fatalf("default list: %d, %d of %d, etag %q", code, len(def.Data), def.Total, hdr.Get("Etag"))
	}
	for _, m := range def.Data {
		outs := m["architecture"].(map[string]any)["output_modalities"].([]any)
		if !slices.Contains(toStrings(outs), "text") {
			t.Fatalf("%v in the default list outputs %v", m["id"], outs)
		}
	}
	if code, _, _ := get(apiPrefix+"/models", "If-None-Match", hdr.Get("Etag")); code != http.StatusNotModified {
		t.Errorf("If-None-Match of the default list: %d, want 304", code)
	}
	_, all, _ := get(apiPrefix + "/models?output_modalities=all")
	if all.Total <= def.Total {
		t.Errorf("all %d, text %d", all.Total, def.Total)
	}
	// A page: links.next carries the query with the offset moved on.
	_, page, _ := get(apiPrefix + "/models?sort=newest&limit=10&offset=5")
	if len(page.Data) != 10 || page.Links.Next == nil || !strings.Contains(*page.Links.Next, "offset=15") || !strings.Contains(*page.Links.Next, "sort=newest") {
		t.Errorf("page: %d items, next %v", len(page.Data), page.Links.Next)
	}
	// OpenAI's shape: the list object and each item's object and owner.
	_, oa, _ := get(apiPrefix+"/models?limit=2", "User-Agent", "OpenAI/JS 6.49.0")
	if oa.Object != "list" || oa.Data[0]["object"] != "model" || oa.Data[0]["owned_by"] == nil {
		t.Errorf("OpenAI list: %+v", oa)
	}
	for _, q := range []string{"sort=throughput-high-to-low", "sort=best", "output_modalities=smell", "supported_parameters=teleport",
		"limit=0", "limit=1001", "offset=-1", "limit=+5", "limit=5&limit=6", "q=gpt", "offset=1e3"} {
		code, _, _ := get(apiPrefix + "/models?" + q)
		if code != http.StatusBadRequest {
			t.Errorf("?%s: %d, want 400", q, code)
		}
	}
	if code, _, _ := get(apiPrefix + "/models?category=programming"); code != 200 {
		t.Errorf("category is accepted and ignored: %d", code)
	}
}

func toStrings(v []any) []string {
	out := make([]string, len(v))
	for i, x := range v {
		out[i], _ = x.(string)
	}
	return out
}

func newGet(path, token string) *http.Request {
	req, _ := http.NewRequest("GET", path, nil)
	req.RequestURI = path
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	return req
}

func TestModelCountUserRetrieveEndpoints(t *testing.T) {
	limited := &keys.APIKey{ID: "k-limited", UserID: "u1", Role: keys.RoleStandard, WorkspaceID: "w1",
		Models: []string{"openai/gpt-4o", "anthropic/claude-sonnet-5"}}
	auth := fakeAuth{"standard": standardKey, "limited": limited}
	api, _ := newTestAPI(t, Options{Catalog: shippedCatalog(t), Auth: auth})
	h := api.Handler()

	rec := do(t, h, "GET", apiPrefix+"/models/count?output_modalities=all", "standard", nil)
	var count struct{ Data struct{ Count int } }
	if rec.Code != 200 || json.Unmarshal(rec.Body.Bytes(), &count) != nil || count.Data.Count == 0 {
		t.Fatalf("count: %d %s", rec.Code, rec.Body)
	}
	rec = do(t, h, "GET", apiPrefix+"/models/user?output_modalities=all", "limited", nil)
	var user listAnswer
	if err := json.Unmarshal(rec.Body.Bytes(), &user); err != nil || user.Total < 2 {
		t.Fatalf("user list: %d %s", rec.Code, rec.Body)
	}
	for _, m := range user.Data {
		id := m["id"].(string)
		if !strings.HasPrefix(id, "openai/gpt-4o") && !strings.HasPrefix(id, "anthropic/claude-sonnet-5") && !strings.HasPrefix(id, "~") {
			t.Errorf("the allowlist let %s through", id)
		}
	}

	// OpenAI's retrieve: the slash percent-encoded, decoded exactly once.
	req := newGet(apiPrefix+"/models/openai%2Fgpt-4o", "standard")
	req.URL.RawPath = apiPrefix + "/models/openai%2Fgpt-4o"
	req.URL.Path = apiPrefix + "/models/openai/gpt-4o"
	req.Header.Set("User-Agent", "OpenAI/Python 2.54.0")
	rec = serve(h, req)
	var m map[string]any
	if rec.Code != 200 || json.Unmarshal(rec.Body.Bytes(), &m) != nil || m["id"] != "openai/gpt-4o" || m["object"] != "model" || m["owned_by"] != "openai" {
		t.Errorf("retrieve: %d %.200s", rec.Code, rec.Body)
	}
	req = newGet(apiPrefix+"/models/openai%252Fgpt-4o", "standard")
	req.URL.RawPath = apiPrefix + "/models/openai%252Fgpt-4o"
	req.URL.Path = apiPrefix + "/models/openai%2Fgpt-4o"
	if rec := serve(h, req); rec.Code != http.StatusNotFound {
		t.Errorf("a double-encoded slash: %d, want 404", rec.Code)
	}
	req = newGet(apiPrefix+"/models/openai%2Fgpt-4o", "limited")
	req.URL.RawPath = apiPrefix + "/models/anthropic%2Fclaude-3-haiku"
	req.URL.Path = apiPrefix + "/models/anthropic/claude-3-haiku"
	if rec := serve(h, req); rec.Code != http.StatusForbidden {
		t.Errorf("a model outside the allowlist: %d, want 403", rec.Code)
	}

	rec = do(t, h, "GET", apiPrefix+"/models/openai/gpt-4o/endpoints", "standard", nil)
	if rec.Code != 200 || !strings.Contains(rec.Body.String(), `"endpoints":[]`) || !strings.Contains(rec.Body.String(), `"id":"openai/gpt-4o"`) {
		t.Errorf("endpoints: %d %.300s", rec.Code, rec.Body)
	}
	if rec := do(t, h, "GET", apiPrefix+"/models/openai/no-such-model/endpoints", "standard", nil); rec.Code != http.StatusNotFound {
		t.Errorf("endpoints of an unknown model: %d", rec.Code)
	}
}
