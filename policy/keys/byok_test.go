package keys

import (
	"reflect"
	"strings"
	"testing"

	"github.com/aigateway/gateway/internal/invalid"
	"github.com/aigateway/gateway/policy/keys/seal"
)

func TestProviderKeyFieldsCheck(t *testing.T) {
	set := func(s string) Optional[string] { return Optional[string]{true, s} }
	secret := func(s string) Optional[seal.Secret] { return Optional[seal.Secret]{true, seal.NewSecret(s)} }
	list := func(items ...string) Optional[[]string] { return Optional[[]string]{true, items} }
	valid := ProviderKeyFields{Provider: set("openai"), Secret: secret("sk-proj-abcdefghijkl"), Name: Optional[*string]{true, ptr("prod")},
		AllowedAPIKeys: list("00000000000000aa"), DeclaredZDR: Optional[*bool]{Set: true}, SortOrder: Optional[int]{true, 3}}
	var p invalid.Problems
	valid.CheckCreate(&p)
	if err := p.Err(); err != nil {
		t.Fatalf("a valid creation: %v", err)
	}
	cases := []struct {
		f      ProviderKeyFields
		create bool
		want   []string
	}{
		{ProviderKeyFields{Secret: secret("sk-x")}, true, []string{"provider"}},
		{ProviderKeyFields{Provider: set("openai")}, true, []string{"key"}},
		{ProviderKeyFields{Provider: set("gemini"), Secret: secret("k")}, true, []string{"provider"}},
		{ProviderKeyFields{Provider: set("openai"), Secret: secret("a b")}, true, []string{"key"}},
		{ProviderKeyFields{Provider: set("openai"), Secret: secret("")}, true, []string{"key"}},
		{ProviderKeyFields{Provider: set("openai"), Secret: secret(strings.Repeat("k", 4097))}, true, []string{"key"}},
		{ProviderKeyFields{Provider: set("openai"), Secret: secret("k"), AllowedAPIKeys: list("nothex")}, true, []string{"allowed_api_key_hashes"}},
		{ProviderKeyFields{Provider: set("openai"), Secret: secret("k"), AllowedModels: list("")}, true, []string{"allowed_models"}},
		{ProviderKeyFields{Provider: set("openai"), Secret: secret("k"), AllowedModels: list(make([]string, 1001)...)}, true, []string{"allowed_models"}},
		{ProviderKeyFields{Provider: set("openai"), Secret: secret("k"), SortOrder: Optional[int]{true, 1_000_001}}, true, []string{"sort_order"}},
		{ProviderKeyFields{Provider: set("openai"), Secret: secret("k"), Name: Optional[*string]{true, ptr("a\u0007")}}, true, []string{"name"}},
		{ProviderKeyFields{}, true, []string{"key", "provider"}},
		{ProviderKeyFields{Provider: set("anthropic")}, false, []string{"provider"}},
		{ProviderKeyFields{Workspace: set("other")}, false, []string{"workspace_id"}},
		{ProviderKeyFields{Name: Optional[*string]{Set: true}, Disabled: Optional[bool]{true, true}}, false, nil},
	}
	for _, c := range cases {
		var p invalid.Problems
		if c.create {
			c.f.CheckCreate(&p)
		} else {
			c.f.CheckUpdate(&p)
		}
		if got := sortedNames(fieldsOf(&p)); !reflect.DeepEqual(got, c.want) {
			t.Errorf("%+v (create %v): named %v, want %v", c.f, c.create, got, c.want)
		}
	}
	// A provider key's name follows the rule of every name shown to people,
	// as a key's does: same problems, same words.
	for name, want := range map[string]string{
		"Prod \u202egnp.exe": "must not contain bidirectional control characters",
		"pr\u200bod":         "must not contain invisible formatting characters",
		"a\u0007":            "must not contain control characters",
		"a\u2028b":           "must not contain control characters",
		"שלום":               "",
	} {
		var p invalid.Problems
		ProviderKeyFields{Name: Optional[*string]{true, &name}}.CheckUpdate(&p)
		var k invalid.Problems
		UpdateRequest{Name: Optional[string]{true, name}}.Check(&k)
		if got := fieldsOf(&p)["name"]; got != want || fieldsOf(&k)["name"] != want {
			t.Errorf("name %q: provider key %q, key %q; want %q for both", name, got, fieldsOf(&k)["name"], want)
		}
	}
	// An unknown provider is that, not also a provider that cannot change.
	var u invalid.Problems
	ProviderKeyFields{Provider: set("gemini")}.CheckUpdate(&u)
	if got := fieldsOf(&u)["provider"]; got != "must be openai or anthropic" {
		t.Errorf("update naming an unknown provider: %q", got)
	}
	if strings.Contains(valid.Secret.Value.String(), "abcdef") {
		t.Fatal("the secret prints itself")
	}
}

func TestMaskSecret(t *testing.T) {
	for in, want := range map[string]string{"sk-proj-abcdefghijkl": "sk-...ijkl", "short": "...", "": "..."} {
		if got := MaskSecret(in); got != want {
			t.Errorf("MaskSecret(%q) = %q, want %q", in, got, want)
		}
	}
}
