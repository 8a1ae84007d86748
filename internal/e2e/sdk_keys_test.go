package e2e

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestOfficialSDKKeys runs @openrouter/sdk's apiKeys and byok calls,
// unmodified, against the embedded default: each call must succeed (the SDK
// validates every answer against its own schema) and say what was asked.
func TestOfficialSDKKeys(t *testing.T) {
	if testing.Short() {
		t.Skip("runs Node")
	}
	node, dir := sdkNode(t)
	g := startGateway(t, testConfig(t))
	admin := g.newKey(t, "sdk-admin", "--management")

	steps := runSDKScript(t, node, dir, "keys.mjs", "GATEWAY_URL="+g.URL, "GATEWAY_KEY="+admin)
	out, err := json.Marshal(steps) // the whole report, to look for secrets in it
	if err != nil {
		t.Fatal(err)
	}
	results := map[string]any{}
	for _, s := range steps {
		if !s.OK {
			t.Errorf("%s failed: %s (status %v)", s.Op, s.Error, s.Status)
			continue
		}
		results[s.Op] = s.Result
	}
	want := []string{"apiKeys.create", "apiKeys.list", "apiKeys.get", "apiKeys.update", "apiKeys.getCurrentKeyMetadata(admin)",
		"apiKeys.update(enable)", "apiKeys.getCurrentKeyMetadata(own)", "apiKeys.delete",
		"byok.create", "byok.list", "byok.get", "byok.update", "byok.delete",
		"apiKeys.update(limit)", "workspaces.setBudget", "workspaces.setBudget(lifetime)", "workspaces.getBudget",
		"workspaces.listBudgets", "workspaces.deleteBudget"}
	for _, op := range want {
		if _, ok := results[op]; !ok {
			t.Errorf("%s did not run or failed", op)
		}
	}
	if t.Failed() {
		return
	}
	created := results["apiKeys.create"].(map[string]any)
	data := created["data"].(map[string]any)
	secret, _ := created["key"].(string)
	hash, _ := data["hash"].(string)
	if !strings.HasPrefix(secret, "sk-gw-"+hash+".") || data["limit"] != 12.5 || data["limitReset"] != "weekly" {
		t.Errorf("create answer: %v", created)
	}
	if !strings.Contains(string(out), `"`+hash+`"`) || strings.Count(string(out), secret) != 1 {
		t.Errorf("the secret must be shown once (create) and the hash listed: %s", out)
	}
	if upd := results["apiKeys.update"].(map[string]any); upd["disabled"] != true || upd["limit"] != nil {
		t.Errorf("update answer: %v", upd)
	}
	if me := results["apiKeys.getCurrentKeyMetadata(admin)"].(map[string]any); me["isManagementKey"] != true {
		t.Errorf("admin's own view: %v", me)
	}
	if me := results["apiKeys.getCurrentKeyMetadata(own)"].(map[string]any); me["isManagementKey"] != false || me["limit"] != nil {
		t.Errorf("the new key's own view: %v", me)
	}
	byok := results["byok.create"].(map[string]any)
	if byok["provider"] != "openai" || byok["label"] != "sk-...cdef" || strings.Contains(string(out), "0123456789abcdef") {
		t.Errorf("byok create: %v (the secret must never come back)", byok)
	}
	if ids, _ := results["byok.list"].([]any); len(ids) != 1 || ids[0] != byok["id"] {
		t.Errorf("byok list walked %v, want the one key", ids)
	}
	if upd := results["byok.update"].(map[string]any); upd["label"] != "sk-...9999" || upd["name"] != "rotated" {
		t.Errorf("byok update: %v", upd)
	}
	if lim := results["apiKeys.update(limit)"].(map[string]any); lim["limit"] != 2.5 || lim["limitRemaining"] != 2.5 || lim["limitReset"] != "daily" {
		t.Errorf("limit through apiKeys.update: %v", lim)
	}
	set := results["workspaces.setBudget"].(map[string]any)
	if b, _ := set["data"].(map[string]any); b["limitUsd"] != 10.0 || b["resetInterval"] != "weekly" || set["includeByokInBudgets"] != true {
		t.Errorf("setBudget: %v", set)
	}
	list := results["workspaces.listBudgets"].(map[string]any)
	if bs, _ := list["data"].([]any); len(bs) != 2 || bs[0].(map[string]any)["resetInterval"] != nil {
		t.Errorf("listBudgets (lifetime first): %v", list)
	}
	// Gone afterwards, as unknown ones.
	for _, path := range []string{"/api/v1/keys/" + hash, "/api/v1/byok/" + byok["id"].(string)} {
		if res, body := g.do(t, "GET", path, admin, nil, nil); res.StatusCode != 404 {
			t.Errorf("GET %s after delete: %d %s", path, res.StatusCode, body)
		}
	}
}
