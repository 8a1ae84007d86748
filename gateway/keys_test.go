package gateway

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/aigateway/gateway/internal/invalid"
	"github.com/aigateway/gateway/internal/money"
	"github.com/aigateway/gateway/policy/keys"
	"github.com/aigateway/gateway/policy/keys/seal"
	"github.com/aigateway/gateway/policy/limits"
)

// fakeKeys answers the key routes from one stored key of user u1.
type fakeKeys struct {
	key     keys.APIKey
	lastQ   keys.ListQuery
	deleted string
}

func (f *fakeKeys) Create(_ context.Context, userID string, req keys.CreateRequest, _ string) (keys.Created, error) {
	var p invalid.Problems
	if req.Check(time.Now(), &p); p.Err() != nil {
		return keys.Created{}, p.Err()
	}
	return keys.Created{Key: f.key, Secret: seal.NewSecret("sk-gw-secret")}, nil
}

func (f *fakeKeys) Get(_ context.Context, userID, id string) (keys.APIKey, error) {
	if userID != f.key.UserID || id != f.key.ID {
		return keys.APIKey{}, keys.ErrKeyNotFound
	}
	return f.key, nil
}

func (f *fakeKeys) List(_ context.Context, userID string, q keys.ListQuery) ([]keys.APIKey, error) {
	f.lastQ = q
	return []keys.APIKey{f.key}, nil
}

func (f *fakeKeys) Update(_ context.Context, userID, id string, u keys.UpdateRequest) (keys.APIKey, error) {
	var p invalid.Problems
	if u.Check(&p); p.Err() != nil {
		return keys.APIKey{}, p.Err()
	}
	if id == "0000000000000001" {
		return keys.APIKey{}, keys.ErrManagedByCLI
	}
	return f.Get(context.Background(), userID, id)
}

func (f *fakeKeys) Delete(_ context.Context, userID, id string) error {
	if _, err := f.Get(context.Background(), userID, id); err != nil {
		return err
	}
	f.deleted = id
	return nil
}

// sendJSON sends body, when there is one, as a JSON client does: declared
// application/json.
func sendJSON(h http.Handler, method, path, token, body string) *httptest.ResponseRecorder {
	req := httptest.NewRequest(method, path, strings.NewReader(body))
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	return serve(h, req)
}

func TestKeyRoutes(t *testing.T) {
	limit := money.Micros(2_500_000)
	fk := &fakeKeys{key: keys.APIKey{ID: "00000000000000aa", UserID: "u1", Name: "ci", Role: keys.RoleStandard,
		Label: "sk-gw-0000...abcd", WorkspaceID: "w1", Limit: &limit, LimitReset: keys.ResetDaily}}
	api, _ := newTestAPI(t, Options{Keys: fk, Limits: &RateLimits{Default: limits.Limit{Rate: 600, Per: time.Minute, Burst: 100}}})
	h := api.Handler()
	send := func(method, path, token, body string) *http.Response {
		t.Helper()
		return sendJSON(h, method, path, token, body).Result()
	}
	decode := func(res *http.Response) map[string]any {
		t.Helper()
		var v map[string]any
		if err := json.NewDecoder(res.Body).Decode(&v); err != nil {
			t.Fatal(err)
		}
		return v
	}

	// Management only, but GET /key answers any key.
	for _, r := range [][2]string{{"POST", "/keys"}, {"GET", "/keys"}, {"GET", "/keys/00000000000000aa"},
		{"PATCH", "/keys/00000000000000aa"}, {"DELETE", "/keys/00000000000000aa"}} {
		if res := send(r[0], apiPrefix+r[1], "standard", `{}`); res.StatusCode != http.StatusForbidden {
			t.Errorf("%s %s with a standard key: %d, want 403", r[0], r[1], res.StatusCode)
		}
	}
	res := send("GET", apiPrefix+"/key", "standard", "")
	if res.StatusCode != http.StatusOK {
		t.Fatalf("GET /key: %d", res.StatusCode)
	}
	cur := decode(res)["data"].(map[string]any)
	if cur["is_management_key"] != false || cur["hash"] != "k-standard" || cur["rate_limit"].(map[string]any)["interval"] != "1m" {
		t.Errorf("GET /key = %v", cur)
	}

	res = send("POST", apiPrefix+"/keys", "management", `{"name":"ci","limit":2.5,"limit_reset":"daily"}`)
	if res.StatusCode != http.StatusCreated {
		t.Fatalf("create: %d", res.StatusCode)
	}
	created := decode(res)
	data := created["data"].(map[string]any)
	if created["key"] != "sk-gw-secret" || data["hash"] != "00000000000000aa" || data["limit"] != 2.5 ||
		data["limit_remaining"] != 2.5 || data["limit_reset"] != "daily" || data["role"] != "standard" {
		t.Errorf("create answer = %v", created)
	}

	rec := sendJSON(h, "POST", apiPrefix+"/keys", "management", `{"name":"ci","limit":-1}`)
	if env := decodeEnvelope(t, rec); rec.Code != 400 || env.Error.Metadata["fields"].(map[string]any)["limit"] == nil {
		t.Errorf("negative limit: %d %v", rec.Code, env)
	}
	if res := send("PATCH", apiPrefix+"/keys/0000000000000001", "management", `{"disabled":true}`); res.StatusCode != http.StatusForbidden {
		t.Errorf("PATCH of a CLI-managed key: %d, want 403", res.StatusCode)
	}
	if res := send("GET", apiPrefix+"/keys/00000000000000bb", "management", ""); res.StatusCode != http.StatusNotFound {
		t.Errorf("unknown key: %d, want 404", res.StatusCode)
	}
	if res := send("DELETE", apiPrefix+"/keys/00000000000000aa", "management", ""); res.StatusCode != http.StatusOK || fk.deleted != "00000000000000aa" {
		t.Errorf("delete: %d, deleted %q", res.StatusCode, fk.deleted)
	}

	if res := send("GET", apiPrefix+"/keys?offset=100&include_disabled=true&workspace_id=prod", "management", ""); res.StatusCode != http.StatusOK ||
		fk.lastQ != (keys.ListQuery{Offset: 100, IncludeDisabled: true, WorkspaceID: "prod"}) {
		t.Errorf("list: %d, query %+v", res.StatusCode, fk.lastQ)
	}
	for _, q := range []string{"offset=-1", "offset=1&offset=2", "offset=+1", "include_disabled=yes", "limit=5", "workspace_id="} {
		if res := send("GET", apiPrefix+"/keys?"+q, "management", ""); res.StatusCode != http.StatusBadRequest {
			t.Errorf("list ?%s: %d, want 400", q, res.StatusCode)
		}
	}
}
