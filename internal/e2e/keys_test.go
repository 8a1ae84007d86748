package e2e

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/aigateway/gateway/client"
	"github.com/aigateway/gateway/providers/providertest"
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
	if me, err := own.CurrentKey(ctx); err != nil || me.Hash != made.Key.Hash {
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
