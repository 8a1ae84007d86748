package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

// TestOfficialSDKsCatalog runs the catalog calls of @openrouter/sdk
// (endpoints.list, models.count, models.list with each filter and sort,
// models.listForUser) and OpenAI's models.list and models.retrieve,
// unmodified, against the embedded default and the shipped catalog.
func TestOfficialSDKsCatalog(t *testing.T) {
	if testing.Short() {
		t.Skip("runs Node")
	}
	node, dir := sdkNode(t)
	// @openrouter/sdk 1.3.19 reads a Model's benchmarks in a shape other
	// than the contract's (it requires design_arena and artificial_analysis
	// where the contract has arena_benchmark and index_benchmark), so it
	// refuses every list holding a model with benchmarks. The contract
	// stands; the SDK is served the shipped catalog without them.
	cfg := testConfig(t)
	cfg.Catalog.Path = withoutBenchmarks(t, cfg.Catalog.Path)
	g := startGateway(t, cfg)
	key := g.newKey(t, "sdk-models")
	steps := runSDKScript(t, node, dir, "models.mjs", "GATEWAY_URL="+g.URL, "GATEWAY_KEY="+key, "MODEL_ID=openai/gpt-4o")
	results := map[string]any{}
	for _, s := range steps {
		if !s.OK {
			t.Errorf("%s %s failed: %.600s (status %v)", s.SDK, s.Op, s.Error, s.Status)
			continue
		}
		results[s.SDK+" "+s.Op] = s.Result
	}
	if len(results) != 18 {
		t.Fatalf("%d calls succeeded, want 18", len(results))
	}
	count, all := results["openrouter models.count"].(float64), results["openrouter models.count(all)"].(float64)
	list := results["openrouter models.list"].(map[string]any)
	if count == 0 || all <= count || list["n"] != count || list["total"] != count {
		t.Errorf("count %v, count(all) %v, list %v: the default is the text models, all of them", count, all, list)
	}
	if user := results["openrouter models.listForUser"].(map[string]any); user["total"] != count {
		t.Errorf("listForUser of a key without allowlist: %v, want the %v text models", user, count)
	}
	ep := results["openrouter endpoints.list"].(map[string]any)
	if ep["id"] != "openai/gpt-4o" || ep["endpoints"] != 0.0 {
		t.Errorf("endpoints.list: %v (the shipped catalog declares none)", ep)
	}
	cheapest := results["openrouter models.list(sort=pricing-low-to-high)"].([]any)
	dearest := results["openrouter models.list(sort=pricing-high-to-low)"].([]any)
	if len(cheapest) != 5 || len(dearest) != 5 || cheapest[0] == dearest[0] {
		t.Errorf("price sorts: %v, %v", cheapest, dearest)
	}
	if images := results["openrouter models.list(image)"].([]any); len(images) == 0 {
		t.Error("no model with image output")
	}
	models := results["openai models.list"].([]any)
	if float64(len(models)) != count {
		t.Errorf("OpenAI models.list: %d models, want %v", len(models), count)
	}
	for _, m := range models[:3] {
		if mm := m.(map[string]any); mm["object"] != "model" || !strings.HasPrefix(mm["id"].(string), mm["owned_by"].(string)+"/") {
			t.Errorf("OpenAI list item %v", mm)
		}
	}
	if m := results["openai models.retrieve"].(map[string]any); m["id"] != "openai/gpt-4o" || m["object"] != "model" || m["owned_by"] != "openai" {
		t.Errorf("OpenAI models.retrieve: %v", m)
	}
}

// withoutBenchmarks writes a copy of the catalog at path without any
// model's benchmarks and returns its path.
func withoutBenchmarks(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}
	root := doc.Content[0]
	for i := 0; i < len(root.Content); i += 2 {
		if root.Content[i].Value != "models" {
			continue
		}
		for _, m := range root.Content[i+1].Content {
			for j := 0; j < len(m.Content); j += 2 {
				if m.Content[j].Value == "benchmarks" {
					m.Content = append(m.Content[:j], m.Content[j+2:]...)
					break
				}
			}
		}
	}
	out, err := yaml.Marshal(&doc)
	if err != nil {
		t.Fatal(err)
	}
	dst := filepath.Join(t.TempDir(), "models.yaml")
	if err := os.WriteFile(dst, out, 0o644); err != nil {
		t.Fatal(err)
	}
	return dst
}
