package e2e

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/aigateway/gateway/backends/providers/providertest"
	"github.com/aigateway/gateway/client"
)

// TestClientKeys: the Go client's key calls against the embedded default,
// every request and answer held to the OpenAPI document by the harness.
func TestClientKeys(t *testing.T) {
	g := startGateway(t, testConfig(t))
	ctx := context.Background()
	alice := g.newClient(t, g.newKey(t, "alice", "--management"))
	bob := g.newClient(t, g.newKey(t, "bob", "--management"))

	limit := 3.25
	made, err := alice.CreateKey(ctx, client.KeyCreate{Name: "ci", Limit: &limit, LimitReset: "monthly", IdempotencyKey: "once"})
	if err != nil {
		t.Fatal(err)
	}
	again, err := alice.CreateKey(ctx, client.KeyCreate{Name: "ci", Limit: &limit, LimitReset: "monthly", IdempotencyKey: "once"})
	if err != nil || again.Secret != made.Secret || again.Key.Hash != made.Key.Hash {
		t.Fatalf("replay: %+v, %v; want the first key and secret", again, err)
	}
	if made.Key.Role != "standard" || made.Key.LimitRemaining == nil || *made.Key.LimitRemaining != 3.25 || made.Key.WorkspaceID == "" {
		t.Errorf("created %+v", made.Key)
	}

	// The new key sees itself; bob sees nothing of alice's.
	own := g.newClient(t, made.Secret)
	if me, err := own.CurrentKey(ctx); err != nil || me.Hash != made.Key.Hash || me.IsManagementKey || me.RateLimit.Requests <= 0 || me.RateLimit.Interval == "" {
		t.Fatalf("GET /key: %+v, %v", me, err)
	}
	_, err = bob.GetKey(ctx, made.Key.Hash)
	notFound := apiError(t, err, 404)
	_, err = alice.GetKey(ctx, "00000000000000ff")
	unknown := apiError(t, err, 404)
	if notFound.Message != unknown.Message {
		t.Errorf("another user's key (%q) and an unknown one (%q) answer differently", notFound.Message, unknown.Message)
	}
	_, err = bob.UpdateKey(ctx, made.Key.Hash, client.KeyUpdate{Disabled: client.Set(true)})
	apiError(t, err, 404)
	apiError(t, bob.DeleteKey(ctx, made.Key.Hash), 404)

	// Management keys are listed and refused.
	var mgmt string
	var hashes []string
	for k, err := range alice.Keys(ctx, client.KeyQuery{IncludeDisabled: true}) {
		if err != nil {
			t.Fatal(err)
		}
		hashes = append(hashes, k.Hash)
		if k.Role == "management" {
			mgmt = k.Hash
		}
	}
	if len(hashes) != 2 || mgmt == "" {
		t.Fatalf("alice's keys: %v", hashes)
	}
	_, err = alice.UpdateKey(ctx, mgmt, client.KeyUpdate{Disabled: client.Set(true)})
	if e := apiError(t, err, 403); !strings.Contains(e.Message, "CLI") {
		t.Errorf("PATCH of a management key: %q", e.Message)
	}

	up, err := alice.UpdateKey(ctx, made.Key.Hash, client.KeyUpdate{Disabled: client.Set(true), Limit: client.Null[float64]()})
	if err != nil || !up.Disabled || up.Limit != nil || up.UpdatedAt == nil {
		t.Fatalf("update: %+v, %v", up, err)
	}
	_, err = own.CurrentKey(ctx)
	apiError(t, err, 401) // this replica forgot it at once
	var listed int
	for range alice.Keys(ctx, client.KeyQuery{}) {
		listed++
	}
	if listed != 1 {
		t.Errorf("without include_disabled %d keys listed, want the management key only", listed)
	}
	if err := alice.DeleteKey(ctx, made.Key.Hash); err != nil {
		t.Fatal(err)
	}
	_, err = alice.GetKey(ctx, made.Key.Hash)
	apiError(t, err, 404)
}

// TestProviderKeyChoice: provider= on a file route uses the workspace's
// enabled provider key that the calling key may use, lowest sort_order
// first; with none, a 400 naming provider.
func TestProviderKeyChoice(t *testing.T) {
	stand := providertest.NewOpenAI(t)
	cfg := testConfig(t)
	cfg.Providers.OpenAI.BaseURL = stand.BaseURL
	g := startGateway(t, cfg)
	ctx := context.Background()
	admin := g.newClient(t, g.newKey(t, "alice", "--management"))
	ci, err := admin.CreateKey(ctx, client.KeyCreate{Name: "ci"})
	if err != nil {
		t.Fatal(err)
	}
	other, err := admin.CreateKey(ctx, client.KeyCreate{Name: "other"})
	if err != nil {
		t.Fatal(err)
	}
	// First in order but only for ci, and not a key the provider accepts.
	if _, err := admin.CreateProviderKey(ctx, client.ProviderKeyCreate{Provider: "openai", Secret: "sk-wrong-000000000000",
		AllowedAPIKeyHashes: []string{ci.Key.Hash}}); err != nil {
		t.Fatal(err)
	}
	good, err := admin.CreateProviderKey(ctx, client.ProviderKeyCreate{Provider: "openai", Secret: providertest.OpenAIKey, SortOrder: 1})
	if err != nil {
		t.Fatal(err)
	}
	list := func(key string) (int, string) {
		res, body := g.do(t, "GET", "/api/v1/files?provider=openai", key, nil, nil)
		return res.StatusCode, string(body)
	}
	if status, body := list(other.Secret); status != http.StatusOK {
		t.Fatalf("other key (the shared provider key): %d %s", status, body)
	}
	if status, _ := list(ci.Secret); status == http.StatusOK {
		t.Fatal("ci's own provider key (which the provider refuses) was not the one used")
	}
	if _, err := admin.UpdateProviderKey(ctx, good.ID, client.ProviderKeyUpdate{Disabled: client.Set(true)}); err != nil {
		t.Fatal(err)
	}
	status, body := list(other.Secret)
	if status != http.StatusBadRequest || !strings.Contains(body, `"provider"`) {
		t.Fatalf("no usable provider key: %d %s, want 400 naming provider", status, body)
	}
	var n int
	for k, err := range admin.ProviderKeys(ctx, "") {
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(k.Label, providertest.OpenAIKey) {
			t.Fatalf("a label shows the secret: %q", k.Label)
		}
		n++
	}
	if n != 2 {
		t.Fatalf("%d provider keys listed, want 2", n)
	}
}

// TestProviderKeyChangeReachesReplicas: two gateways on one database. A
// provider key replaced, disabled, enabled or deleted through one is in
// effect on the other, which remembers what it looked up for its file
// routes (app's fileLookupTTL, 1 s), within 2 s, while the other keeps
// listing. The replica that made the change is covered by
// TestProviderKeyChoice: there it is in effect at once.
func TestProviderKeyChangeReachesReplicas(t *testing.T) {
	t.Parallel() // mostly waiting out the other replica's cache
	stand := providertest.NewOpenAI(t)
	cfg := testConfig(t)
	cfg.Providers.OpenAI.BaseURL = stand.BaseURL
	writer, reader := startGateway(t, cfg), startGateway(t, cfg)
	ctx := context.Background()
	admin := writer.newKey(t, "alice", "--management")
	c := writer.newClient(t, admin)
	pk, err := c.CreateProviderKey(ctx, client.ProviderKeyCreate{Provider: "openai", Secret: providertest.OpenAIKey})
	if err != nil {
		t.Fatal(err)
	}
	list := func() int {
		res, _ := reader.do(t, "GET", "/api/v1/files?provider=openai", admin, nil, nil)
		return res.StatusCode
	}
	if status := list(); status != http.StatusOK {
		t.Fatalf("list through the other replica: %d", status)
	}
	for _, step := range []struct {
		name   string
		update client.ProviderKeyUpdate
		delete bool
		want   int
	}{
		{"replaced by a key the provider refuses", client.ProviderKeyUpdate{Secret: client.Set("sk-wrong-000000000000")}, false, http.StatusBadGateway},
		{"replaced by the right one again", client.ProviderKeyUpdate{Secret: client.Set(providertest.OpenAIKey)}, false, http.StatusOK},
		{"disabled", client.ProviderKeyUpdate{Disabled: client.Set(true)}, false, http.StatusBadRequest},
		{"enabled", client.ProviderKeyUpdate{Disabled: client.Set(false)}, false, http.StatusOK},
		{"deleted", client.ProviderKeyUpdate{}, true, http.StatusBadRequest},
	} {
		// The other replica has just listed, with the key as it was.
		changed := time.Now()
		if step.delete {
			err = c.DeleteProviderKey(ctx, pk.ID)
		} else {
			_, err = c.UpdateProviderKey(ctx, pk.ID, step.update)
		}
		if err != nil {
			t.Fatalf("%s: %v", step.name, err)
		}
		waitFor(t, 2*time.Second, step.name+" on the other replica", func() bool { return list() == step.want })
		t.Logf("%s: in effect on the other replica after %v", step.name, time.Since(changed).Round(time.Millisecond))
	}
}

// TestKeyRoutesIDOR: every key and provider key route × method × {own,
// other user's, unknown} × {management, standard, service}. Only the owner's
// management key reaches its own; another user's id answers exactly what an
// unknown one does.
func TestKeyRoutesIDOR(t *testing.T) {
	g := startGateway(t, testConfig(t))
	ctx := context.Background()
	callers := map[string]string{
		"management": g.newKey(t, "alice", "--management"),
		"standard":   g.newKey(t, "alice"),
		"service":    g.newKey(t, "alice", "--service"),
	}
	alice := g.newClient(t, callers["management"])
	bob := g.newClient(t, g.newKey(t, "bob", "--management"))
	target := func(c *client.Client) (keyHash, providerKeyID string) {
		t.Helper()
		k, err := c.CreateKey(ctx, client.KeyCreate{Name: "target"})
		if err != nil {
			t.Fatal(err)
		}
		p, err := c.CreateProviderKey(ctx, client.ProviderKeyCreate{Provider: "anthropic", Secret: "sk-ant-target-000000"})
		if err != nil {
			t.Fatal(err)
		}
		return k.Key.Hash, p.ID
	}
	bobKey, bobProvider := target(bob)
	bodies := map[string]string{"GET": "", "PATCH": `{"name":"renamed"}`, "DELETE": ""}
	for _, method := range []string{"GET", "PATCH", "DELETE"} {
		ownKey, ownProvider := target(alice)
		for _, r := range []struct{ kind, own, other, unknown string }{
			{"keys", ownKey, bobKey, "00000000000000ee"},
			{"byok", ownProvider, bobProvider, "9c0d7a3e-0000-4000-8000-000000000000"},
		} {
			for who, key := range callers {
				answers := map[string]string{}
				for _, id := range []struct{ name, id string }{{"own", r.own}, {"other", r.other}, {"unknown", r.unknown}} {
					var body *strings.Reader
					if bodies[method] != "" {
						body = strings.NewReader(bodies[method])
					}
					var res *http.Response
					var raw []byte
					if body != nil {
						res, raw = g.do(t, method, "/api/v1/"+r.kind+"/"+id.id, key, body, http.Header{"Content-Type": {"application/json"}})
					} else {
						res, raw = g.do(t, method, "/api/v1/"+r.kind+"/"+id.id, key, nil, nil)
					}
					want := http.StatusForbidden
					switch {
					case who != "management":
					case id.name == "own":
						want = http.StatusOK
					default:
						want = http.StatusNotFound
					}
					if res.StatusCode != want {
						t.Errorf("%s %s/%s (%s) with a %s key: %d %s, want %d", method, r.kind, id.name, id.id, who, res.StatusCode, raw, want)
					}
					answers[id.name] = string(raw)
				}
				if answers["other"] != answers["unknown"] {
					t.Errorf("%s %s with a %s key: another user's id answers %s, an unknown one %s", method, r.kind, who, answers["other"], answers["unknown"])
				}
			}
		}
	}
	// Bob's keys were not touched by any of it.
	if k, err := bob.GetKey(ctx, bobKey); err != nil || k.Name != "target" {
		t.Fatalf("bob's key after the probes: %+v, %v", k, err)
	}
	if p, err := bob.GetProviderKey(ctx, bobProvider); err != nil || p.Name != nil {
		t.Fatalf("bob's provider key after the probes: %+v, %v", p, err)
	}
}

// TestClientUsage: a component reports usage through the client in batches
// (2,500 reports: three requests), sent twice; the key's usage is exact to
// the millionth, BYOK apart; the client's budget calls.
func TestClientUsage(t *testing.T) {
	g := startGateway(t, testConfig(t))
	ctx := context.Background()
	admin := g.newClient(t, g.newKey(t, "alice", "--management"))
	svc := g.newClient(t, g.newKey(t, "alice", "--service"))
	limit := 0.0025
	k, err := admin.CreateKey(ctx, client.KeyCreate{Name: "metered", Limit: &limit})
	if err != nil {
		t.Fatal(err)
	}
	reports := make([]client.UsageReport, 2500)
	for i := range reports {
		reports[i] = client.UsageReport{ID: fmt.Sprintf("req-%05d", i), KeyHash: k.Key.Hash, Cost: 0.000001, BYOK: i%5 == 0}
	}
	res, err := svc.ReportUsage(ctx, reports)
	if err != nil || res.Accepted != 2500 || res.Duplicates != 0 {
		t.Fatalf("first send: %+v, %v", res, err)
	}
	res, err = svc.ReportUsage(ctx, reports)
	if err != nil || res.Accepted != 0 || res.Duplicates != 2500 {
		t.Fatalf("second send: %+v, %v", res, err)
	}
	got, err := admin.GetKey(ctx, k.Key.Hash)
	if err != nil {
		t.Fatal(err)
	}
	if got.Usage != 0.0025 || got.BYOKUsage != 0.0005 || got.UsageDaily != 0.0025 || got.LimitRemaining == nil || *got.LimitRemaining != 0.0005 {
		t.Fatalf("usage %+v (remaining %v): want 0.0025, 0.0005 of it BYOK, 0.0005 left (BYOK not counted)", got, *got.LimitRemaining)
	}
	_, err = admin.ReportUsage(ctx, reports[:1])
	apiError(t, err, 403)
	_, err = svc.ReportUsage(ctx, []client.UsageReport{{ID: "x", KeyHash: "0000000000000000", Cost: 1}})
	if e := apiError(t, err, 400); !strings.Contains(fmt.Sprint(e.Metadata), "reports[0].key") {
		t.Errorf("unknown key: %v", e.Metadata)
	}

	if _, err := admin.SetBudget(ctx, "default", "weekly", 10, nil); err != nil {
		t.Fatal(err)
	}
	_, err = admin.SetBudget(ctx, "default", "daily", 10, nil)
	if e := apiError(t, err, 400); !strings.Contains(fmt.Sprint(e.Metadata), "weekly") {
		t.Errorf("daily = weekly: %v, want the weekly budget named", e.Metadata)
	}
	budgets, _, err := admin.Budgets(ctx, "default")
	if err != nil || len(budgets) != 1 || *budgets[0].ResetInterval != "weekly" {
		t.Fatalf("budgets: %+v, %v", budgets, err)
	}
	if err := admin.DeleteBudget(ctx, "default", "weekly"); err != nil {
		t.Fatal(err)
	}
	apiError(t, admin.DeleteBudget(ctx, "default", "weekly"), 404)
}
