package gateway

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/aigateway/gateway/catalog"
	"github.com/aigateway/gateway/configs"
	"github.com/aigateway/gateway/policy/keys"
)

// staticCatalog is a CatalogSource that never reloads.
type staticCatalog struct{ c *catalog.Catalog }

func (s staticCatalog) Current() *catalog.Catalog { return s.c }

// loadShipped loads the shipped catalog once for every test: it is large.
var loadShipped = sync.OnceValues(func() (*catalog.Catalog, error) {
	data, err := configs.Shipped.ReadFile("models.yaml")
	if err != nil {
		return nil, err
	}
	return catalog.FromBytes(data)
})

func shippedCatalog(t testing.TB) staticCatalog {
	t.Helper()
	c, err := loadShipped()
	if err != nil {
		t.Fatal(err)
	}
	return staticCatalog{c}
}

func TestModelRoutes(t *testing.T) {
	const model = "ai21/jamba-large-1.7"
	limited := &keys.APIKey{ID: "k-limited", UserID: "u1", Role: keys.RoleStandard, Models: []string{"amazon/nova-lite-v1"}}
	api, _ := newTestAPI(t, Options{
		Catalog: shippedCatalog(t),
		Auth:    fakeAuth{"standard": standardKey, "limited": limited},
	})
	h := api.Handler()
	tests := []struct {
		name, path, token string
		status            int
		wantID            string // the answer's data.id, for a 200 on one model
	}{
		{"a model", "/api/v1/model/" + model, "standard", 200, model},
		{"percent-encoded once", "/api/v1/model/ai21/jamba-large-1%2E7", "standard", 200, model},
		{"unknown model", "/api/v1/model/ai21/nothing", "standard", 404, ""},
		{"encoded slash names nothing", "/api/v1/model/ai21/a%2Fb", "standard", 404, ""},
		{"control character", "/api/v1/model/ai21/a%01b", "standard", 400, ""},
		{"invalid UTF-8", "/api/v1/model/ai21/a%FFb", "standard", 400, ""},
		{"not in the key's allowlist", "/api/v1/model/" + model, "limited", 403, ""},
		{"in the key's allowlist", "/api/v1/model/amazon/nova-lite-v1", "limited", 200, "amazon/nova-lite-v1"},
		{"the list", "/api/v1/models", "standard", 200, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := do(t, h, http.MethodGet, tt.path, tt.token, nil)
			if rec.Code != tt.status {
				t.Fatalf("status %d, want %d: %s", rec.Code, tt.status, rec.Body)
			}
			if tt.status != 200 {
				decodeEnvelope(t, rec)
				return
			}
			if rec.Header().Get("ETag") == "" {
				t.Error("no ETag")
			}
			if tt.wantID != "" {
				var body struct {
					Data struct {
						ID string `json:"id"`
					} `json:"data"`
				}
				if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil || body.Data.ID != tt.wantID {
					t.Errorf("data.id %q (%v), want %q", body.Data.ID, err, tt.wantID)
				}
			}
		})
	}
}

func TestModelRoutesAnswerNotModified(t *testing.T) {
	api, _ := newTestAPI(t, Options{Catalog: shippedCatalog(t)})
	h := api.Handler()
	for _, path := range []string{"/api/v1/model/ai21/jamba-large-1.7", "/api/v1/models"} {
		t.Run(path, func(t *testing.T) {
			first := do(t, h, http.MethodGet, path, "standard", nil)
			req := httptest.NewRequest(http.MethodGet, path, nil)
			req.Header.Set("Authorization", "Bearer standard")
			req.Header.Set("If-None-Match", `"other", `+first.Header().Get("ETag"))
			rec := serve(h, req)
			if rec.Code != http.StatusNotModified || rec.Body.Len() != 0 {
				t.Fatalf("status %d with %d bytes, want 304 and no body", rec.Code, rec.Body.Len())
			}
		})
	}
}
