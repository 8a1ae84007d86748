package keys

import (
	"errors"
	"strings"
	"testing"
)

func TestParseProviderKeyRequest(t *testing.T) {
	f, err := ParseProviderKeyRequest([]byte(`{"provider":"openai","key":"sk-proj-abcdefghijkl","name":"prod",
		"allowed_api_key_hashes":["00000000000000aa"],"declared_zdr":null,"sort_order":3}`), true)
	if err != nil {
		t.Fatal(err)
	}
	if f.Provider.Value != "openai" || f.Secret.Value.Reveal() != "sk-proj-abcdefghijkl" || *f.Name.Value != "prod" ||
		len(f.AllowedAPIKeys.Value) != 1 || !f.DeclaredZDR.Set || f.DeclaredZDR.Value != nil || f.SortOrder.Value != 3 {
		t.Fatalf("decoded %+v", f)
	}
	if strings.Contains(f.Secret.Value.String(), "abcdef") {
		t.Fatal("the secret prints itself")
	}
	cases := []struct {
		body   string
		create bool
		field  string
	}{
		{`{"key":"sk-x"}`, true, "provider"},
		{`{"provider":"openai"}`, true, "key"},
		{`{"provider":"gemini","key":"k"}`, true, "provider"},
		{`{"provider":"openai","key":"a b"}`, true, "key"},
		{`{"provider":"openai","key":""}`, true, "key"},
		{`{"provider":"openai","key":"k","allowed_api_key_hashes":["nothex"]}`, true, "allowed_api_key_hashes"},
		{`{"provider":"openai","key":"k","allowed_user_ids":["u"]}`, true, "allowed_user_ids"},
		{`{"provider":"openai","key":"k","sort_order":1.5}`, true, "sort_order"},
		{`{"provider":"openai","key":"k","secret":"x"}`, true, "secret"},
		{`{"provider":"anthropic"}`, false, "provider"},
		{`{"workspace_id":"other"}`, false, "workspace_id"},
		{`{"disabled":"yes"}`, false, "disabled"},
	}
	for _, c := range cases {
		_, err := ParseProviderKeyRequest([]byte(c.body), c.create)
		var bad *InvalidError
		if !errors.As(err, &bad) || bad.Problems[0].Field != c.field {
			t.Errorf("%s (create %v): %v, want a problem of %q", c.body, c.create, err, c.field)
		}
	}
}

func TestMaskSecret(t *testing.T) {
	for in, want := range map[string]string{"sk-proj-abcdefghijkl": "sk-...ijkl", "short": "...", "": "..."} {
		if got := MaskSecret(in); got != want {
			t.Errorf("MaskSecret(%q) = %q, want %q", in, got, want)
		}
	}
}
