package gateway

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aigateway/gateway/internal/invalid"
	"github.com/aigateway/gateway/workspace"
)

// fakeWorkspaces records what the edge passed and answers as told; its
// checks add the problems it is told to.
type fakeWorkspaces struct {
	result   workspace.Result
	list     workspace.Listing
	err      error
	problems []invalid.Field // added by CheckCreate and CheckUpdate

	gotUser, gotRef, gotKey string
	gotCreate               *workspace.CreateRequest
	gotUpdate               *workspace.UpdateRequest
	gotPage                 workspace.Page
	checked                 string // "create" or "update"
}

func (f *fakeWorkspaces) Create(_ context.Context, userID string, req workspace.CreateRequest, key string) (workspace.Result, error) {
	f.gotUser, f.gotCreate, f.gotKey = userID, &req, key
	return f.result, f.err
}

func (f *fakeWorkspaces) CheckCreate(_ workspace.CreateRequest, p *invalid.Problems) {
	f.checked = "create"
	for _, pr := range f.problems {
		p.Add(pr.Name, pr.Problem)
	}
}

func (f *fakeWorkspaces) CheckUpdate(_ workspace.UpdateRequest, p *invalid.Problems) {
	f.checked = "update"
	for _, pr := range f.problems {
		p.Add(pr.Name, pr.Problem)
	}
}

func (f *fakeWorkspaces) Get(_ context.Context, userID, ref string) (workspace.Workspace, error) {
	f.gotUser, f.gotRef = userID, ref
	return f.result.Workspace, f.err
}

func (f *fakeWorkspaces) List(_ context.Context, userID string, p workspace.Page) (workspace.Listing, error) {
	f.gotUser, f.gotPage = userID, p
	return f.list, f.err
}

func (f *fakeWorkspaces) Update(_ context.Context, userID, ref string, u workspace.UpdateRequest, key string) (workspace.Result, error) {
	f.gotUser, f.gotRef, f.gotUpdate, f.gotKey = userID, ref, &u, key
	return f.result, f.err
}

func (f *fakeWorkspaces) Delete(_ context.Context, userID, ref string) error {
	f.gotUser, f.gotRef = userID, ref
	return f.err
}

var testWorkspace = workspace.Workspace{
	ID: "0190a0b1-2c3d-7e4f-8a9b-0c1d2e3f4a5b", Name: "W", Slug: "w", DefaultGuardrailID: "g",
	CreatedBy: "u1", CreatedAt: time.Date(2026, 8, 18, 12, 0, 0, 0, time.UTC), IOLoggingSamplingRate: 1,
}

const testWorkspaceJSON = `{"id":"0190a0b1-2c3d-7e4f-8a9b-0c1d2e3f4a5b","name":"W","slug":"w","description":"",` +
	`"default_text_model":null,"default_image_model":null,"default_provider_sort":null,"default_guardrail_id":"g",` +
	`"created_by":"u1","created_at":"2026-08-18T12:00:00Z","updated_at":null,"include_byok_in_budgets":false,` +
	`"io_logging_api_key_ids":null,"io_logging_sampling_rate":1,"is_data_discount_logging_enabled":false,` +
	`"is_observability_broadcast_enabled":false,"is_observability_io_logging_enabled":false}`

func TestWorkspaceRoutes(t *testing.T) {
	tests := []struct {
		name     string
		method   string
		path     string
		body     string
		header   map[string]string
		fake     fakeWorkspaces
		status   int
		wantBody string            // exact body of a success
		replayed bool              // Idempotent-Replayed: true expected
		meta     map[string]any    // metadata of an error
		passed   map[string]string // what the service must have been given
		page     *workspace.Page   // the page List must have been given
	}{
		{name: "create", method: "POST", path: "/api/v1/workspaces", body: `{"name":"W"}`,
			header: map[string]string{"Idempotency-Key": "k1"},
			fake:   fakeWorkspaces{result: workspace.Result{Workspace: testWorkspace}},
			status: 201, wantBody: `{"data":` + testWorkspaceJSON + `}`,
			passed: map[string]string{"user": "u1", "request": `{"name":"W","slug":null,"io_logging_api_key_ids":null}`, "key": "k1"}},
		{name: "create replayed", method: "POST", path: "/api/v1/workspaces", body: `{}`,
			fake:   fakeWorkspaces{result: workspace.Result{Workspace: testWorkspace, Replayed: true}},
			status: 201, wantBody: `{"data":` + testWorkspaceJSON + `}`, replayed: true},
		{name: "update", method: "PATCH", path: "/api/v1/workspaces/w", body: `{"name":"W"}`,
			fake:   fakeWorkspaces{result: workspace.Result{Workspace: testWorkspace}},
			status: 200, wantBody: `{"data":` + testWorkspaceJSON + `}`,
			passed: map[string]string{"ref": "w", "request": `{"Set":true,"Value":"W"}`}},
		{name: "create with problems of the body and the domain's", method: "POST", path: "/api/v1/workspaces", body: `{"name":7}`,
			fake:   fakeWorkspaces{problems: []invalid.Field{{Name: "name", Problem: "domain's"}, {Name: "slug", Problem: "required"}}},
			status: 400, meta: map[string]any{"fields": map[string]any{"name": "must be a string", "slug": "required"}},
			passed: map[string]string{"checked": "create"}},
		{name: "create cut short is not held to what it lacks", method: "POST", path: "/api/v1/workspaces",
			body: `{"name":"a","name":"b"}`, fake: fakeWorkspaces{problems: []invalid.Field{{Name: "name", Problem: "domain's"}}},
			status: 400, meta: map[string]any{"fields": map[string]any{"name": "duplicate key"}},
			passed: map[string]string{"checked": "update"}},
		{name: "update replayed", method: "PATCH", path: "/api/v1/workspaces/w", body: `{}`,
			fake:   fakeWorkspaces{result: workspace.Result{Workspace: testWorkspace, Replayed: true}},
			status: 200, replayed: true},
		{name: "update not JSON", method: "PATCH", path: "/api/v1/workspaces/w", body: `{}`,
			header: map[string]string{"Content-Type": "text/plain"},
			status: 400, meta: map[string]any{"fields": map[string]any{"content_type": "must be application/json"}}},
		{name: "update without a content type", method: "PATCH", path: "/api/v1/workspaces/w", body: `{}`,
			header: map[string]string{"Content-Type": ""},
			status: 400, meta: map[string]any{"fields": map[string]any{"content_type": "must be application/json"}}},
		{name: "update key too long", method: "PATCH", path: "/api/v1/workspaces/w", body: `{}`,
			header: map[string]string{"Idempotency-Key": strings.Repeat("k", 256)},
			status: 400, meta: map[string]any{"fields": map[string]any{"idempotency_key": "must be 1 to 255 printable ASCII characters"}}},
		{name: "update body too large", method: "PATCH", path: "/api/v1/workspaces/w", body: strings.Repeat(" ", maxJSONBody+1),
			status: 413},
		{name: "update slug taken", method: "PATCH", path: "/api/v1/workspaces/w", body: `{}`,
			fake: fakeWorkspaces{err: workspace.ErrSlugTaken}, status: 409},
		{name: "update mismatch", method: "PATCH", path: "/api/v1/workspaces/w", body: `{}`,
			fake: fakeWorkspaces{err: workspace.ErrIdempotencyMismatch}, status: 422},
		{name: "update invalid", method: "PATCH", path: "/api/v1/workspaces/w", body: `{}`,
			fake:   fakeWorkspaces{err: invalid.One("slug", "bad")},
			status: 400, meta: map[string]any{"fields": map[string]any{"slug": "bad"}}},
		{name: "get", method: "GET", path: "/api/v1/workspaces/w",
			fake:   fakeWorkspaces{result: workspace.Result{Workspace: testWorkspace}},
			status: 200, wantBody: `{"data":` + testWorkspaceJSON + `}`, passed: map[string]string{"ref": "w"}},
		{name: "get percent-encoded", method: "GET", path: "/api/v1/workspaces/%77",
			fake: fakeWorkspaces{result: workspace.Result{Workspace: testWorkspace}}, status: 200, passed: map[string]string{"ref": "w"}},
		{name: "get not found", method: "GET", path: "/api/v1/workspaces/w",
			fake: fakeWorkspaces{err: workspace.ErrNotFound}, status: 404},
		{name: "list", method: "GET", path: "/api/v1/workspaces?offset=1&limit=2",
			fake:   fakeWorkspaces{list: workspace.Listing{Workspaces: []workspace.Workspace{testWorkspace}, Total: 3}},
			status: 200, wantBody: `{"data":[` + testWorkspaceJSON + `],"total_count":3}`,
			page: &workspace.Page{Offset: 1, Limit: 2}},
		{name: "list empty", method: "GET", path: "/api/v1/workspaces",
			fake:   fakeWorkspaces{list: workspace.Listing{Workspaces: []workspace.Workspace{}}},
			status: 200, wantBody: `{"data":[],"total_count":0}`},
		{name: "list bad limit", method: "GET", path: "/api/v1/workspaces?limit=0",
			status: 400, meta: map[string]any{"fields": map[string]any{"limit": "must be an integer from 1 to 100"}}},
		{name: "delete", method: "DELETE", path: "/api/v1/workspaces/w",
			status: 200, wantBody: `{"deleted":true}`, passed: map[string]string{"ref": "w", "user": "u1"}},
		{name: "delete not found", method: "DELETE", path: "/api/v1/workspaces/w",
			fake: fakeWorkspaces{err: workspace.ErrNotFound}, status: 404},
		{name: "delete refused", method: "DELETE", path: "/api/v1/workspaces/w",
			fake:   fakeWorkspaces{err: &workspace.NotDeletableError{Files: 2, Keys: 1}},
			status: 400, meta: map[string]any{"files": 2.0, "keys": 1.0, "uploads_in_progress": 0.0}},
		{name: "delete default", method: "DELETE", path: "/api/v1/workspaces/default",
			fake:   fakeWorkspaces{err: &workspace.NotDeletableError{Default: true}},
			status: 400, meta: map[string]any{"default": true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fake := tt.fake
			api, _ := newTestAPI(t, Options{Workspaces: &fake})
			req := httptest.NewRequest(tt.method, tt.path, strings.NewReader(tt.body))
			req.Header.Set("Authorization", "Bearer management")
			if tt.body != "" {
				req.Header.Set("Content-Type", "application/json")
			}
			for k, v := range tt.header {
				req.Header.Set(k, v)
			}
			rec := httptest.NewRecorder()
			api.Handler().ServeHTTP(rec, req)
			if rec.Code != tt.status {
				t.Fatalf("status = %d %s, want %d", rec.Code, rec.Body, tt.status)
			}
			if fake.checked != tt.passed["checked"] {
				t.Errorf("checked as %q, want %q", fake.checked, tt.passed["checked"])
			}
			if tt.status >= 400 {
				env := decodeEnvelope(t, rec)
				if tt.meta != nil && !reflect.DeepEqual(env.Error.Metadata, tt.meta) {
					t.Errorf("metadata = %v, want %v", env.Error.Metadata, tt.meta)
				}
				return
			}
			if tt.wantBody != "" && rec.Body.String() != tt.wantBody {
				t.Errorf("body =\n%s\nwant\n%s", rec.Body, tt.wantBody)
			}
			if got := rec.Header().Get("Idempotent-Replayed") == "true"; got != tt.replayed {
				t.Errorf("Idempotent-Replayed = %v, want %v", got, tt.replayed)
			}
			if tt.page != nil && fake.gotPage != *tt.page {
				t.Errorf("List got %+v, want %+v", fake.gotPage, *tt.page)
			}
			got := map[string]string{"user": fake.gotUser, "ref": fake.gotRef, "key": fake.gotKey, "checked": fake.checked}
			switch {
			case fake.gotCreate != nil:
				b, _ := json.Marshal(fake.gotCreate)
				got["request"] = string(b)
			case fake.gotUpdate != nil:
				b, _ := json.Marshal(fake.gotUpdate.Name)
				got["request"] = string(b)
			}
			for k, v := range tt.passed {
				if got[k] != v {
					t.Errorf("service got %s %q, want %q", k, got[k], v)
				}
			}
		})
	}
}

func TestWorkspaceRoutesNeedManagementKey(t *testing.T) {
	for _, rt := range []struct{ method, path string }{
		{"GET", "/api/v1/workspaces"}, {"PATCH", "/api/v1/workspaces/w"}, {"DELETE", "/api/v1/workspaces/w"},
	} {
		t.Run(rt.method, func(t *testing.T) {
			fake := &fakeWorkspaces{}
			api, _ := newTestAPI(t, Options{Workspaces: fake})
			rec := do(t, api.Handler(), rt.method, rt.path, "standard", strings.NewReader(`{}`))
			if rec.Code != http.StatusForbidden || decodeEnvelope(t, rec).Error.Message != msgManagementOnly {
				t.Errorf("standard key = %d %s, want 403", rec.Code, rec.Body)
			}
			if fake.gotUser != "" {
				t.Error("the service was called for a standard key")
			}
		})
	}
}

func TestWorkspacePage(t *testing.T) {
	tests := []struct {
		name   string
		query  map[string][]string
		want   workspace.Page
		fields []string
	}{
		{"defaults", nil, workspace.Page{Offset: 0, Limit: 50}, nil},
		{"both", map[string][]string{"offset": {"20"}, "limit": {"100"}}, workspace.Page{Offset: 20, Limit: 100}, nil},
		{"limit 1", map[string][]string{"limit": {"1"}}, workspace.Page{Offset: 0, Limit: 1}, nil},
		{"other parameters ignored", map[string][]string{"order": {"x"}}, workspace.Page{Offset: 0, Limit: 50}, nil},
		{"limit 0", map[string][]string{"limit": {"0"}}, workspace.Page{}, []string{"limit"}},
		{"limit 101", map[string][]string{"limit": {"101"}}, workspace.Page{}, []string{"limit"}},
		{"negative offset", map[string][]string{"offset": {"-1"}}, workspace.Page{}, []string{"offset"}},
		{"plus sign", map[string][]string{"offset": {"+1"}}, workspace.Page{}, []string{"offset"}},
		{"not a number", map[string][]string{"offset": {"ten"}, "limit": {"5x"}}, workspace.Page{}, []string{"limit", "offset"}},
		{"empty", map[string][]string{"limit": {""}}, workspace.Page{}, []string{"limit"}},
		{"twice", map[string][]string{"limit": {"5", "6"}}, workspace.Page{}, []string{"limit"}},
		{"overflow", map[string][]string{"offset": {"99999999999999999999"}}, workspace.Page{}, []string{"offset"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := workspacePage(tt.query)
			if tt.fields == nil {
				if err != nil || got != tt.want {
					t.Fatalf("workspacePage = %+v, %v; want %+v", got, err, tt.want)
				}
				return
			}
			bad := invalid.Fields(err)
			if len(bad) != len(tt.fields) {
				t.Fatalf("err = %v, want fields %v", err, tt.fields)
			}
			for _, f := range tt.fields {
				if !slices.ContainsFunc(bad, func(p invalid.Field) bool { return p.Name == f && p.Problem != "" }) {
					t.Errorf("%s not named: %v", f, bad)
				}
			}
		})
	}
}
