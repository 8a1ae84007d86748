package catalog

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/cockroachdb/apd/v3"
	"gopkg.in/yaml.v3"
)

// gatewayOnlyKeys are catalog file keys that never reach a response.
var gatewayOnlyKeys = []string{"aliases", "variants", "endpoints"}

// TestRoundTrip decodes every entry of real catalogs and checks that its
// encoding is the same JSON as the source: the same keys present or absent,
// null where null, integers as integers and prices as the same strings.
func TestRoundTrip(t *testing.T) {
	for _, path := range []string{
		"testdata/snapshot-sample.json", // 44 entries of the 2026-08-18 snapshot, verbatim
		shippedPath,                     // the shipped catalog
		"testdata/valid.yaml",
	} {
		t.Run(path, func(t *testing.T) {
			var c *Catalog
			var data []byte
			if path == shippedPath {
				c, _ = loadShipped(t)
				data = shipped.data
			} else {
				var err error
				if data, err = os.ReadFile(path); err != nil {
					t.Fatal(err)
				}
				if c, err = FromBytes(data); err != nil {
					t.Fatalf("load: %v", err)
				}
			}
			sources := sourceModels(t, data)
			if len(sources) != c.Len() {
				t.Fatalf("source has %d models, catalog %d", len(sources), c.Len())
			}
			for id, src := range sources {
				e, ok := c.LookupID(id)
				if !ok {
					t.Errorf("%s: not found", id)
					continue
				}
				var body struct{ Data json.RawMessage }
				if err := json.Unmarshal(e.Body, &body); err != nil {
					t.Fatalf("%s: body: %v", id, err)
				}
				got := genericJSON(t, body.Data)
				for _, k := range gatewayOnlyKeys {
					if _, leaked := got.(map[string]any)[k]; leaked {
						t.Errorf("%s: gateway-only key %q in the body", id, k)
					}
				}
				want := src.(map[string]any)
				for _, k := range gatewayOnlyKeys {
					delete(want, k)
				}
				if _, ok := want["links"]; !ok {
					// Derived when left out; checked by TestResolve.
					delete(got.(map[string]any), "links")
				}
				if err := sameJSON(want, got, ""); err != nil {
					t.Errorf("%s: %v", id, err)
				}
			}
		})
	}
}

// scalar is a leaf of the source file with its resolved YAML tag (JSON is
// read as YAML, so both kinds of file go through the same path).
type scalar struct{ tag, value string }

func sourceModels(t *testing.T, data []byte) map[string]any {
	t.Helper()
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}
	root := genericYAML(doc.Content[0]).(map[string]any)
	out := map[string]any{}
	for _, m := range root["models"].([]any) {
		out[m.(map[string]any)["id"].(scalar).value] = m
	}
	return out
}

func genericYAML(n *yaml.Node) any {
	switch n.Kind {
	case yaml.MappingNode:
		m := map[string]any{}
		for i := 0; i+1 < len(n.Content); i += 2 {
			m[n.Content[i].Value] = genericYAML(n.Content[i+1])
		}
		return m
	case yaml.SequenceNode:
		s := []any{}
		for _, c := range n.Content {
			s = append(s, genericYAML(c))
		}
		return s
	}
	return scalar{tag: n.ShortTag(), value: n.Value}
}

func genericJSON(t *testing.T, data []byte) any {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		t.Fatal(err)
	}
	return v
}

// sameJSON compares a source value with its re-encoding.
func sameJSON(src, got any, path string) error {
	switch s := src.(type) {
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok {
			return fmt.Errorf("%s: want an object, got %v", path, got)
		}
		keys := func(m map[string]any) []string {
			var k []string
			for key := range m {
				k = append(k, key)
			}
			slices.Sort(k)
			return k
		}
		if !slices.Equal(keys(s), keys(g)) {
			return fmt.Errorf("%s: keys %v, got %v", path, keys(s), keys(g))
		}
		for k, v := range s {
			if err := sameJSON(v, g[k], path+"."+k); err != nil {
				return err
			}
		}
		return nil
	case []any:
		g, ok := got.([]any)
		if !ok || len(g) != len(s) {
			return fmt.Errorf("%s: want %d items, got %v", path, len(s), got)
		}
		for i := range s {
			if err := sameJSON(s[i], g[i], fmt.Sprintf("%s[%d]", path, i)); err != nil {
				return err
			}
		}
		return nil
	case scalar:
		switch s.tag {
		case "!!null":
			if got != nil {
				return fmt.Errorf("%s: want null, got %v", path, got)
			}
		case "!!bool":
			if b, ok := got.(bool); !ok || fmt.Sprint(b) != strings.ToLower(s.value) {
				return fmt.Errorf("%s: want %s, got %v", path, s.value, got)
			}
		case "!!int", "!!float":
			n, ok := got.(json.Number)
			if !ok {
				// A string field written as a plain scalar keeps its text.
				if str, isStr := got.(string); isStr && str == s.value {
					return nil
				}
				return fmt.Errorf("%s: want number %s, got %#v", path, s.value, got)
			}
			if s.tag == "!!int" && strings.ContainsAny(string(n), ".eE") {
				return fmt.Errorf("%s: integer %s became %s", path, s.value, n)
			}
			a, _, err1 := apd.NewFromString(s.value)
			b, _, err2 := apd.NewFromString(string(n))
			if err1 != nil || err2 != nil || a.Cmp(b) != 0 {
				return fmt.Errorf("%s: want %s, got %s", path, s.value, n)
			}
		default:
			if str, ok := got.(string); !ok || str != s.value {
				return fmt.Errorf("%s: want string %q, got %#v", path, s.value, got)
			}
		}
		return nil
	}
	return fmt.Errorf("%s: unexpected source value %T", path, src)
}

func TestNullableJSON(t *testing.T) {
	type doc struct {
		A Nullable[string] `json:"a,omitzero"`
		B Nullable[int64]  `json:"b,omitzero"`
		C Nullable[[]int]  `json:"c,omitzero"`
	}
	for _, tc := range []struct{ in, out string }{
		{`{}`, `{}`},
		{`{"a":null,"b":null,"c":null}`, `{"a":null,"b":null,"c":null}`},
		{`{"a":"x","b":0,"c":[]}`, `{"a":"x","b":0,"c":[]}`},
		{`{"b":9007199254740993}`, `{"b":9007199254740993}`},
	} {
		t.Run(tc.in, func(t *testing.T) {
			var d doc
			if err := json.Unmarshal([]byte(tc.in), &d); err != nil {
				t.Fatal(err)
			}
			out, err := json.Marshal(d)
			if err != nil {
				t.Fatal(err)
			}
			if string(out) != tc.out {
				t.Errorf("got %s, want %s", out, tc.out)
			}
		})
	}
	if v, ok := Some("x").Get(); !ok || v != "x" {
		t.Error("Some: Get")
	}
	if !Null[int]().IsNull() || (Nullable[int]{}).IsNull() || !(Nullable[int]{}).IsZero() {
		t.Error("Null / zero states")
	}
}

// TestWireRules pins the encoding of optional, nullable and numeric fields on
// a model written by hand.
func TestWireRules(t *testing.T) {
	c := loadTestCatalog(t)
	tests := []struct {
		id      string
		present map[string]string // JSON path -> exact raw JSON
		absent  []string          // JSON paths that must be absent
	}{
		{
			id: "acme/rocket",
			present: map[string]string{
				"knowledge_cutoff":                   `null`,
				"hub_id":                             `""`,
				"pricing.prompt":                     `"0.0000020"`, // verbatim, trailing zero kept
				"pricing.discount":                   `0`,
				"pricing.overrides":                  `[{"min_prompt_tokens":200000,"prompt":"0.000004","completion":"0.000015"}]`,
				"architecture.instruct_type":         `null`,
				"top_provider.max_completion_tokens": `null`,
				"per_request_limits":                 `null`,
				"default_parameters":                 `{"temperature":1,"top_p":null}`,
				"supported_voices":                   `null`,
				"reasoning.supports_max_tokens":      `true`,
				"benchmarks.index_benchmark":         `{"intelligence_index":50.1,"coding_index":null,"agentic_index":40}`,
				"description":                        `"A fast <test> model & friend."`,
				"created":                            `1767225600`,
			},
			absent: []string{"expiration_date", "alias_target", "architecture.image", "pricing.request"},
		},
		{
			id: "acme/rocket:free",
			present: map[string]string{
				"supported_parameters": `[]`,
				"default_parameters":   `{}`,
				"per_request_limits":   `{"prompt_tokens":1000,"completion_tokens":500}`,
				"links":                `{"details":"/api/v1/models/acme/rocket/endpoints"}`,
			},
			absent: []string{"description", "knowledge_cutoff", "hub_id", "reasoning", "benchmarks",
				"architecture.instruct_type", "architecture.tokenizer", "top_provider.context_length",
				"pricing.overrides", "pricing.discount"},
		},
		{
			id: "acme/router",
			present: map[string]string{
				"context_length":        `null`,
				"architecture.modality": `null`,
				"expiration_date":       `"2099-12-31"`,
				"pricing":               `{"prompt":"-1","completion":"-1"}`,
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.id, func(t *testing.T) {
			e, ok := c.LookupID(tc.id)
			if !ok {
				t.Fatal("not found")
			}
			for path, want := range tc.present {
				got, ok := rawAt(t, e.Body, "data."+path)
				if !ok {
					t.Errorf("%s: absent, want %s", path, want)
				} else if got != want {
					t.Errorf("%s: got %s, want %s", path, got, want)
				}
			}
			for _, path := range tc.absent {
				if got, ok := rawAt(t, e.Body, "data."+path); ok {
					t.Errorf("%s: present (%s), want absent", path, got)
				}
			}
		})
	}
}

// rawAt returns the raw JSON at a dotted path of body.
func rawAt(t *testing.T, body []byte, path string) (string, bool) {
	t.Helper()
	raw := json.RawMessage(body)
	for _, k := range strings.Split(path, ".") {
		var m map[string]json.RawMessage
		if err := json.Unmarshal(raw, &m); err != nil {
			return "", false
		}
		var ok bool
		if raw, ok = m[k]; !ok {
			return "", false
		}
	}
	return string(raw), true
}

func loadTestCatalog(t testing.TB) *Catalog {
	t.Helper()
	c, err := Load("testdata/valid.yaml")
	if err != nil {
		t.Fatal(err)
	}
	return c
}
