package app

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"testing"

	"github.com/aigateway/gateway/configs"
	"github.com/aigateway/gateway/policy/keys"
)

// TestFirstKeyListsTheDefaultWorkspace: a user whose first key comes from
// the command line (as the first-run link's does, through the same
// CreateKey) lists the default workspace over HTTP at once, the one every
// key of theirs acts in, before anything read it by id.
func TestFirstKeyListsTheDefaultWorkspace(t *testing.T) {
	dir := t.TempDir()
	cfg := configs.Default()
	cfg.Metadata = configs.Metadata{Driver: "sqlite", DSN: filepath.Join(dir, "gateway.db")}
	cfg.Storage.FS.Dir = filepath.Join(dir, "files")
	cfg.Catalog.Path = "../../../configs/models.yaml"
	cfg.Console.Enabled = false
	ctx := context.Background()
	rt, err := Open(ctx, cfg, Env{Getenv: func(string) string { return "" }, Logs: io.Discard})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	a, err := Build(ctx, rt)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	h := a.Handler()
	get := func(path, token string, v any) {
		t.Helper()
		req := httptest.NewRequest(http.MethodGet, path, nil)
		req.Header.Set("Authorization", "Bearer "+token)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != http.StatusOK {
			t.Fatalf("GET %s = %d %s", path, rec.Code, rec.Body)
		}
		if err := json.Unmarshal(rec.Body.Bytes(), v); err != nil {
			t.Fatal(err)
		}
	}

	admin, _, err := rt.CreateKey(ctx, keys.NewKeyRequest{Name: "admin", User: "newcomer", Role: keys.RoleManagement})
	if err != nil {
		t.Fatal(err)
	}
	var list struct {
		Data []struct {
			ID   string `json:"id"`
			Slug string `json:"slug"`
		} `json:"data"`
		Total int `json:"total_count"`
	}
	get("/api/v1/workspaces", admin, &list)
	if list.Total != 1 || len(list.Data) != 1 || list.Data[0].Slug != "default" {
		t.Fatalf("a new user's workspaces = %+v, want the default", list)
	}
	var keyList struct {
		Data []struct {
			WorkspaceID string `json:"workspace_id"`
		} `json:"data"`
	}
	get("/api/v1/keys", admin, &keyList)
	if len(keyList.Data) != 1 || keyList.Data[0].WorkspaceID != list.Data[0].ID {
		t.Errorf("the keys act in %+v, the list shows %q", keyList.Data, list.Data[0].ID)
	}
}
