package gateway

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/aigateway/gateway/gateway/openapi"
	"github.com/go-chi/chi/v5"
)

// documentedRoutes lists "METHOD /path" for every operation of the embedded
// document, the path under the document's server URL as the router sees it.
func documentedRoutes(t *testing.T) []string {
	t.Helper()
	var doc struct {
		Servers []struct {
			URL string `json:"url"`
		} `json:"servers"`
		Paths map[string]map[string]json.RawMessage `json:"paths"`
	}
	if err := json.Unmarshal(openapi.Document, &doc); err != nil {
		t.Fatalf("the OpenAPI document is not JSON: %v", err)
	}
	if len(doc.Servers) != 1 || doc.Servers[0].URL != apiPrefix {
		t.Fatalf("servers = %+v, want one server at %s", doc.Servers, apiPrefix)
	}
	var routes []string
	for path, item := range doc.Paths {
		for method := range item {
			switch method {
			case "get", "put", "post", "delete", "options", "head", "patch", "trace":
				routes = append(routes, strings.ToUpper(method)+" "+apiPrefix+path)
			}
		}
	}
	slices.Sort(routes)
	return routes
}

// servedRoutes lists "METHOD /path" for every route of the router under
// apiPrefix.
func servedRoutes(t *testing.T) []string {
	t.Helper()
	api, _ := newTestAPI(t, Options{})
	mux := api.router()
	var routes []string
	err := chi.Walk(mux, func(method, route string, _ http.Handler, _ ...func(http.Handler) http.Handler) error {
		if strings.HasPrefix(route, apiPrefix+"/") {
			routes = append(routes, method+" "+route)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(routes)
	return slices.Compact(routes)
}

// The document names exactly the routes the router serves: a route added
// without its description, or a description left behind by a removed route,
// fails here. Path parameters must carry the same names in both.
func TestOpenAPIDocumentsEveryRoute(t *testing.T) {
	documented, served := documentedRoutes(t), servedRoutes(t)
	if len(served) == 0 {
		t.Fatal("the router serves no route under " + apiPrefix)
	}
	for _, r := range served {
		if !slices.Contains(documented, r) {
			t.Errorf("route %s is served but not in the OpenAPI document", r)
		}
	}
	for _, r := range documented {
		if !slices.Contains(served, r) {
			t.Errorf("the OpenAPI document names %s, which the router does not serve", r)
		}
	}
}

// The document is served without a key, with a strong ETag.
func TestOpenAPIServedWithoutKey(t *testing.T) {
	api, _ := newTestAPI(t, Options{})
	h := api.Handler()
	rec := do(t, h, "GET", apiPrefix+"/openapi.json", "", nil)
	if rec.Code != http.StatusOK {
		t.Fatalf("GET openapi.json = %d %s", rec.Code, rec.Body)
	}
	if ct := rec.Header().Get("Content-Type"); ct != "application/json" {
		t.Errorf("Content-Type = %q", ct)
	}
	if rec.Body.String() != string(openapi.Document) {
		t.Error("the body is not the embedded document")
	}
	etag := rec.Header().Get("ETag")
	if !strings.HasPrefix(etag, `"`) {
		t.Fatalf("ETag = %q, want a strong one", etag)
	}
	req := httptest.NewRequest("GET", apiPrefix+"/openapi.json", nil)
	req.Header.Set("If-None-Match", etag)
	rec = httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if rec.Code != http.StatusNotModified {
		t.Errorf("with If-None-Match = %d, want 304", rec.Code)
	}
}
