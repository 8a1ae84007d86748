package catalog

import (
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
)

const shippedPath = "../configs/models.yaml"

var shipped struct {
	once sync.Once
	data []byte
	c    *Catalog
	f    *file
	err  error
}

// loadShipped loads configs/models.yaml once for all tests: under the race
// detector a load of the whole catalog takes seconds.
func loadShipped(t testing.TB) (*Catalog, *file) {
	t.Helper()
	shipped.once.Do(func() {
		shipped.data, shipped.err = os.ReadFile(shippedPath)
		if shipped.err == nil {
			shipped.c, shipped.f, shipped.err = compile(shipped.data, shippedPath)
		}
	})
	if shipped.err != nil {
		t.Fatalf("the shipped catalog does not load: %v", shipped.err)
	}
	return shipped.c, shipped.f
}

// TestShippedCatalog: configs/models.yaml loads with zero problems and holds
// every kind of entry the gateway must be able to serve.
func TestShippedCatalog(t *testing.T) {
	c, f := loadShipped(t)
	if c.Len() < 40 {
		t.Errorf("%d models, want at least 40", c.Len())
	}
	authors := map[string]bool{}
	var free, tts, embeddings, imageOut, efforts, overrides, cache, benchmarks, tildeRecords int
	var variants, aliases []string
	for _, m := range f.models {
		id, _ := ParseID(m.ID)
		authors[strings.TrimPrefix(id.Author, "~")] = true
		if id.Variant == "free" {
			free++
		}
		if m.SupportedVoices != nil && len(m.SupportedVoices) > 0 && slices.Contains(m.Architecture.OutputModalities, "speech") {
			tts++
		}
		if slices.Contains(m.Architecture.OutputModalities, "embeddings") {
			embeddings++
		}
		if slices.Contains(m.Architecture.OutputModalities, "image") {
			imageOut++
		}
		if m.Reasoning != nil {
			if e, ok := m.Reasoning.SupportedEfforts.Get(); ok && len(e) > 0 {
				efforts++
			}
		}
		if len(m.Pricing.Overrides) > 0 {
			overrides++
		}
		if m.Pricing.InputCacheRead != "" {
			cache++
		}
		if m.Benchmarks != nil && len(m.Benchmarks.ArenaBenchmark) > 0 {
			benchmarks++
		}
		if id.Tilde() {
			tildeRecords++
		}
		for _, v := range m.Variants {
			variants = append(variants, m.ID+":"+v)
		}
		aliases = append(aliases, m.Aliases...)
	}
	for _, a := range []string{"openai", "anthropic", "google", "meta-llama", "mistralai", "deepseek", "qwen", "x-ai", "cohere"} {
		if !authors[a] {
			t.Errorf("no model from %s", a)
		}
	}
	for _, tc := range []struct {
		what string
		n    int
		min  int
	}{
		{":free entries", free, 3},
		{"text-to-speech models with voices", tts, 1},
		{"embeddings models", embeddings, 1},
		{"image-output models", imageOut, 1},
		{"reasoning models with effort lists", efforts, 5},
		{"models with pricing overrides", overrides, 5},
		{"models with cache pricing", cache, 5},
		{"models with benchmark data", benchmarks, 5},
		{"~ alias records", tildeRecords, 1},
		{"routing variants", len(variants), 3},
		{"slug aliases", len(aliases), 3},
		{"latest aliases", len(f.latest), 3},
	} {
		if tc.n < tc.min {
			t.Errorf("%d %s, want at least %d", tc.n, tc.what, tc.min)
		}
	}
	// Every extra name resolves.
	for _, name := range slices.Concat(variants, aliases) {
		if _, ok := c.LookupID(name); !ok {
			t.Errorf("%s does not resolve", name)
		}
	}
	for _, l := range f.latest {
		e, ok := c.LookupID(l.alias)
		if !ok || e.Model.AliasTarget == nil || e.Model.AliasTarget.Slug != l.target {
			t.Errorf("%s does not answer with alias_target %s", l.alias, l.target)
		}
	}
	e, ok := c.LookupID("openai/gpt-4o-mini-tts")
	if !ok || len(e.Model.SupportedVoices) == 0 {
		t.Error("openai/gpt-4o-mini-tts with voices is missing")
	}
	if e, ok := c.LookupID("openai/text-embedding-3-small"); !ok || e.Model.Pricing.Prompt != "0.00000002" {
		t.Error("openai/text-embedding-3-small at $0.02 per 1M tokens is missing")
	}
}

// TestShippedHeader: the file names the snapshot it was built from.
func TestShippedHeader(t *testing.T) {
	data, err := os.ReadFile(shippedPath)
	if err != nil {
		t.Fatal(err)
	}
	header, _, _ := strings.Cut(string(data), "\nmodels:")
	for _, line := range strings.Split(header, "\n") {
		if line != "" && !strings.HasPrefix(line, "#") {
			t.Fatalf("not a comment before the models list: %q", line)
		}
	}
	if !strings.Contains(header, "2026-08-18") {
		t.Error("the header comment does not give the snapshot date")
	}
}
