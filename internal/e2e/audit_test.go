package e2e

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/aigateway/gateway/client"
)

// auditEntry is an entry of GET /audit as the wire has it.
type auditEntry struct {
	ID     string `json:"id"`
	At     string `json:"at"`
	Action string `json:"action"`
	Target string `json:"target"`
	Actor  struct {
		KeyHash    string `json:"key_hash"`
		UserID     string `json:"user_id"`
		Via        string `json:"via"`
		ClientAddr string `json:"client_addr"`
		RequestID  string `json:"request_id"`
	} `json:"actor"`
	Changes []struct {
		Field string          `json:"field"`
		Old   json.RawMessage `json:"old"`
		New   json.RawMessage `json:"new"`
	} `json:"changes"`
}

// change is the old and new JSON of field in e, and whether e has it.
func (e auditEntry) change(field string) (old, new string, ok bool) {
	for _, c := range e.Changes {
		if c.Field == field {
			return string(c.Old), string(c.New), true
		}
	}
	return "", "", false
}

// TestAuditLog: on the real binary, over SQLite and PostgreSQL, every
// management action leaves its entry: keys created, updated, disabled and
// deleted through the API, a workspace, a budget and a provider key
// changed, a sign-in and a sign-out of the console, a key disabled with
// the CLI. GET /audit shows each to the acting user, with the acting key,
// the route, page or command, the client's address, the request's id and
// what changed (never a secret); pages follow by cursor without a gap or
// a repeat; another user's management key sees none of them. Every answer
// is checked against the OpenAPI document.
func TestAuditLog(t *testing.T) {
	for _, sc := range metadataStores() {
		t.Run(sc.name, func(t *testing.T) {
			t.Parallel()
			testAuditLog(t, sc)
		})
	}
}

func testAuditLog(t *testing.T, sc storeCase) {
	bin := buildGatewayBinary(t)
	cfg := fleetConfig(t)
	dir := filepath.Dir(cfg.Metadata.DSN)
	sc.configure(t, &cfg)
	path := writeConfigIn(t, dir, cfg)
	admin := fleetManagementKey(t, path, "alice")
	other := fleetManagementKey(t, path, "bob")
	p := launchGateway(t, bin, path, "gateway.log")
	p.waitReady(t)
	hc := contractClient(t, nil)
	ctx := context.Background()
	api, err := client.New(p.base, admin, client.WithHTTPClient(hc))
	if err != nil {
		t.Fatal(err)
	}
	me, err := api.CurrentKey(ctx)
	if err != nil {
		t.Fatal(err)
	}

	// Keys through the API.
	k, err := api.CreateKey(client.WithRequestID(ctx, "audit-create-1"), client.KeyCreate{Name: "audited"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := api.UpdateKey(ctx, k.Key.Hash, client.KeyUpdate{Name: client.Set("audited twice")}); err != nil {
		t.Fatal(err)
	}
	if _, err := api.UpdateKey(ctx, k.Key.Hash, client.KeyUpdate{Disabled: client.Set(true)}); err != nil {
		t.Fatal(err)
	}
	if err := api.DeleteKey(ctx, k.Key.Hash); err != nil {
		t.Fatal(err)
	}
	// A workspace, its budget and a provider key of it.
	ws, err := api.CreateWorkspace(ctx, client.WorkspaceCreate{Name: "Team", Slug: "team"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := api.UpdateWorkspace(ctx, ws.ID, client.WorkspaceUpdate{Description: client.Set("audited team")}); err != nil {
		t.Fatal(err)
	}
	if _, err := api.SetBudget(ctx, ws.ID, "daily", 12.5, nil); err != nil {
		t.Fatal(err)
	}
	const providerSecret = "sk-audit-provider-secret-0123456789"
	pk, err := api.CreateProviderKey(ctx, client.ProviderKeyCreate{Provider: "openai", Secret: providerSecret, Workspace: ws.ID})
	if err != nil {
		t.Fatal(err)
	}
	const rotatedSecret = "sk-audit-provider-rotated-9876543210"
	if _, err := api.UpdateProviderKey(ctx, pk.ID, client.ProviderKeyUpdate{Secret: client.Set(rotatedSecret)}); err != nil {
		t.Fatal(err)
	}
	// The console: a sign-in and a sign-out.
	b := newConsoleVisitor(t, p.base)
	b.signIn(admin)
	b.signOut()
	// The CLI disables a key.
	cliKey, err := api.CreateKey(ctx, client.KeyCreate{Name: "for the cli"})
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "keys", "disable", "--config", path, "--id", cliKey.Key.Hash)
	cmd.Env = append(os.Environ(), "GATEWAY_BYOK_ENCRYPTION_KEY="+testSealingKey)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("gateway keys disable: %v\n%s", err, out)
	}

	// The whole log, three entries a page.
	var all []auditEntry
	seen := map[string]bool{}
	pages := 0
	for cursor := ""; ; pages++ {
		if pages > 50 {
			t.Fatal("the pages do not end")
		}
		q := url.Values{"limit": {"3"}}
		if cursor != "" {
			q.Set("cursor", cursor)
		}
		page := getAuditPage(t, hc, p.base, admin, q)
		for _, e := range page.Data {
			if seen[e.ID] {
				t.Fatalf("entry %s on two pages", e.ID)
			}
			seen[e.ID] = true
			all = append(all, e)
		}
		if page.Cursor == nil {
			if page.HasMore {
				t.Fatal("has_more without a cursor")
			}
			break
		}
		if !page.HasMore || len(page.Data) != 3 {
			t.Fatalf("a page with a cursor has %d entries, has_more %v", len(page.Data), page.HasMore)
		}
		cursor = *page.Cursor
	}
	for i := 1; i < len(all); i++ {
		if all[i-1].At < all[i].At {
			t.Fatalf("entry %d (%s) is newer than the one before it (%s)", i, all[i].At, all[i-1].At)
		}
	}
	whole := getAuditPage(t, hc, p.base, admin, url.Values{"limit": {"200"}})
	if len(whole.Data) != len(all) || whole.HasMore {
		t.Fatalf("one page of 200 has %d entries, the walk by 3 %d", len(whole.Data), len(all))
	}

	find := func(action, target string) auditEntry {
		t.Helper()
		for _, e := range all {
			if e.Action == action && e.Target == target {
				return e
			}
		}
		t.Fatalf("no %s of %s in the log", action, target)
		return auditEntry{}
	}
	byAPI := func(e auditEntry, via string) {
		t.Helper()
		a := e.Actor
		if a.KeyHash != me.Hash || a.UserID != "alice" || a.Via != via || a.ClientAddr != "127.0.0.1" || a.RequestID == "" {
			t.Errorf("%s of %s: actor %+v, want the management key through %s", e.Action, e.Target, a, via)
		}
	}
	created := find("key.create", k.Key.Hash)
	byAPI(created, "POST /api/v1/keys")
	if created.Actor.RequestID != "audit-create-1" {
		t.Errorf("the creation's request id is %q, want the one sent", created.Actor.RequestID)
	}
	if _, n, ok := created.change("name"); !ok || n != `"audited"` {
		t.Errorf("key.create changes: %+v", created.Changes)
	}
	renamed := find("key.update", k.Key.Hash)
	byAPI(renamed, "PATCH /api/v1/keys/{hash}")
	if o, n, ok := renamed.change("name"); !ok || o != `"audited"` || n != `"audited twice"` {
		t.Errorf("key.update changes: %+v", renamed.Changes)
	}
	disabled := find("key.disable", k.Key.Hash)
	byAPI(disabled, "PATCH /api/v1/keys/{hash}")
	if o, n, ok := disabled.change("disabled"); !ok || o != "false" || n != "true" {
		t.Errorf("key.disable changes: %+v", disabled.Changes)
	}
	byAPI(find("key.delete", k.Key.Hash), "DELETE /api/v1/keys/{hash}")
	byAPI(find("workspace.create", ws.ID), "POST /api/v1/workspaces")
	wsUpdated := find("workspace.update", ws.ID)
	byAPI(wsUpdated, "PATCH /api/v1/workspaces/{id}")
	if _, n, ok := wsUpdated.change("description"); !ok || n != `"audited team"` {
		t.Errorf("workspace.update changes: %+v", wsUpdated.Changes)
	}
	budget := find("budget.set", ws.ID)
	byAPI(budget, "PUT /api/v1/workspaces/{id}/budgets/{interval}")
	if len(budget.Changes) == 0 {
		t.Error("budget.set records no change")
	}
	byAPI(find("provider_key.create", pk.ID), "POST /api/v1/byok")
	rotated := find("provider_key.update", pk.ID)
	byAPI(rotated, "PATCH /api/v1/byok/{id}")
	if len(rotated.Changes) == 0 {
		t.Error("provider_key.update records no change")
	}
	for _, c := range rotated.Changes {
		if string(c.Old) != "null" && string(c.New) != "null" && strings.Contains(c.Field, "key") && !strings.Contains(c.Field, "label") {
			t.Errorf("the rotated secret's change shows values: %+v", c)
		}
	}
	signIn := find("console.sign_in", me.Hash)
	if a := signIn.Actor; a.KeyHash != me.Hash || a.UserID != "alice" || a.Via != "console POST /console/sign-in" || a.ClientAddr != "127.0.0.1" || a.RequestID == "" {
		t.Errorf("console.sign_in: actor %+v", a)
	}
	signOut := find("console.sign_out", me.Hash)
	if a := signOut.Actor; a.KeyHash != me.Hash || a.UserID != "alice" || a.Via != "console POST /console/sign-out" || a.ClientAddr != "127.0.0.1" {
		t.Errorf("console.sign_out: actor %+v", a)
	}
	byCLI := find("key.disable", cliKey.Key.Hash)
	if a := byCLI.Actor; a.KeyHash != "" || a.UserID != "alice" || a.Via != "cli keys disable" || a.ClientAddr != "" || a.RequestID != "" {
		t.Errorf("the CLI's key.disable: actor %+v", a)
	}

	// Never a secret, whatever the field.
	raw := getAuditRaw(t, hc, p.base, admin, url.Values{"limit": {"200"}})
	for _, secret := range []string{providerSecret, rotatedSecret, k.Secret, admin} {
		if strings.Contains(raw, secret) {
			t.Errorf("a secret is in the audit log: %q", secret)
		}
	}

	// Filters.
	only := getAuditPage(t, hc, p.base, admin, url.Values{"action": {"key.disable"}})
	if len(only.Data) != 2 {
		t.Errorf("action=key.disable: %d entries, want the API's and the CLI's", len(only.Data))
	}
	of := getAuditPage(t, hc, p.base, admin, url.Values{"target": {k.Key.Hash}})
	if len(of.Data) != 4 {
		t.Errorf("target=the key: %d entries, want its create, update, disable and delete", len(of.Data))
	}
	by := getAuditPage(t, hc, p.base, admin, url.Values{"actor": {me.Hash}, "since": {created.At}})
	for _, e := range by.Data {
		if e.Actor.KeyHash != me.Hash || e.At < created.At {
			t.Errorf("actor and since: %+v", e)
		}
	}
	if len(by.Data) == 0 {
		t.Error("actor and since: no entry")
	}

	// Another user's management key sees none of it.
	for _, e := range getAuditPage(t, hc, p.base, other, url.Values{"limit": {"200"}}).Data {
		if e.Actor.UserID != "bob" || e.Actor.KeyHash == me.Hash || seen[e.ID] {
			t.Errorf("bob's management key reads %+v", e)
		}
	}
	// A key that is not a management key is refused, as on every
	// management route; so is a malformed filter.
	std, err := api.CreateKey(ctx, client.KeyCreate{Name: "standard"})
	if err != nil {
		t.Fatal(err)
	}
	if res, body := getAudit(t, hc, p.base, std.Secret, nil); res.StatusCode != http.StatusForbidden {
		t.Errorf("standard key: %d %s, want 403", res.StatusCode, body)
	}
	if res, body := getAudit(t, hc, p.base, admin, url.Values{"since": {"yesterday"}}); res.StatusCode != http.StatusBadRequest || !strings.Contains(body, `"since"`) {
		t.Errorf("since=yesterday: %d %s, want 400 naming since", res.StatusCode, body)
	}
}

type auditPage struct {
	Data    []auditEntry `json:"data"`
	HasMore bool         `json:"has_more"`
	Cursor  *string      `json:"cursor"`
}

func getAudit(t *testing.T, hc *http.Client, base, key string, q url.Values) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, base+"/api/v1/audit?"+q.Encode(), nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+key)
	res, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	return res, string(body)
}

func getAuditRaw(t *testing.T, hc *http.Client, base, key string, q url.Values) string {
	t.Helper()
	res, body := getAudit(t, hc, base, key, q)
	if res.StatusCode != http.StatusOK {
		t.Fatalf("GET /audit?%s = %d %s", q.Encode(), res.StatusCode, body)
	}
	return body
}

func getAuditPage(t *testing.T, hc *http.Client, base, key string, q url.Values) auditPage {
	t.Helper()
	var p auditPage
	if err := json.Unmarshal([]byte(getAuditRaw(t, hc, base, key, q)), &p); err != nil {
		t.Fatal(err)
	}
	return p
}

// consoleVisitor is a browser of the console: it keeps cookies, sends
// forms as the console's pages do, and does not follow redirects.
type consoleVisitor struct {
	t    *testing.T
	base string
	hc   *http.Client
}

func newConsoleVisitor(t *testing.T, base string) *consoleVisitor {
	jar, _ := cookiejar.New(nil)
	return &consoleVisitor{t: t, base: base, hc: &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error {
		return http.ErrUseLastResponse
	}}}
}

var consoleCSRF = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

func (b *consoleVisitor) csrf(path string) string {
	b.t.Helper()
	res, err := b.hc.Get(b.base + path)
	if err != nil {
		b.t.Fatal(err)
	}
	defer res.Body.Close()
	body, _ := io.ReadAll(res.Body)
	m := consoleCSRF.FindSubmatch(body)
	if m == nil {
		b.t.Fatalf("GET %s = %d: no form token", path, res.StatusCode)
	}
	return string(m[1])
}

func (b *consoleVisitor) post(path string, form url.Values) *http.Response {
	b.t.Helper()
	req, _ := http.NewRequest(http.MethodPost, b.base+path, strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", b.base)
	req.Header.Set("Sec-Fetch-Site", "same-origin")
	res, err := b.hc.Do(req)
	if err != nil {
		b.t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, res.Body)
	res.Body.Close()
	return res
}

func (b *consoleVisitor) signIn(key string) {
	b.t.Helper()
	if res := b.post("/console/sign-in", url.Values{"csrf": {b.csrf("/console/sign-in")}, "key": {key}}); res.StatusCode != http.StatusSeeOther {
		b.t.Fatalf("console sign-in = %d", res.StatusCode)
	}
}

func (b *consoleVisitor) signOut() {
	b.t.Helper()
	if res := b.post("/console/sign-out", url.Values{"csrf": {b.csrf("/console/workspaces")}}); res.StatusCode != http.StatusSeeOther ||
		res.Header.Get("Location") != "/console/sign-in?m=signed-out" {
		b.t.Fatalf("console sign-out = %d to %q", res.StatusCode, res.Header.Get("Location"))
	}
}
