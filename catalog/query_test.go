package catalog

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
)

// queryModel is one model of the query catalog: what the sorts and filters
// read, nothing else.
type queryModel struct {
	id, prompt, completion string
	context, created       string // "null" for a missing context
	outputs                string // "text" or "image"
	params                 string
	bench                  string // the benchmarks mapping, or ""
}

// queryCatalog builds a catalog whose sorts have missing values and ties.
func queryCatalog(t *testing.T) *Catalog {
	t.Helper()
	ms := []queryModel{
		{"t/a", "1", "3", "1000", "100", "text", "[tools, temperature]", "{arena_benchmark: [{arena: m, category: c, rating: 900, win_rate: 1, rank: 2}, {arena: m, category: d, rating: 1300, win_rate: 1, rank: 1}], index_benchmark: {intelligence_index: 10, coding_index: null, agentic_index: 5}}"},
		{"t/b", "2", "2", "null", "300", "text", "[tools]", ""},
		{"t/c", "-1", "-1", "5000", "200", "text", "[temperature]", "{arena_benchmark: [], index_benchmark: {intelligence_index: 10, coding_index: 7, agentic_index: null}}"},
		{"t/d", "0", "0", "1000", "300", "image", "[]", "{arena_benchmark: [{arena: m, category: c, rating: 1000, win_rate: 1, rank: 3}]}"},
		{"t/e", "4", "0", "8000", "50", "text", "[tools, temperature]", "{arena_benchmark: [], index_benchmark: {intelligence_index: 30, coding_index: 7, agentic_index: 6}}"},
	}
	var b strings.Builder
	b.WriteString("models:\n")
	for _, m := range ms {
		modality := "text->" + m.outputs
		fmt.Fprintf(&b, `  - id: %s
    canonical_slug: %s
    name: %s
    created: %s
    context_length: %s
    pricing: {prompt: "%s", completion: "%s"}
    architecture: {modality: %s, input_modalities: [text], output_modalities: [%s]}
    top_provider: {is_moderated: false}
    per_request_limits: null
    supported_parameters: %s
    default_parameters: {}
    supported_voices: null
`, m.id, m.id, m.id, m.created, m.context, m.prompt, m.completion, modality, m.outputs, m.params)
		if m.bench != "" {
			fmt.Fprintf(&b, "    benchmarks: %s\n", m.bench)
		}
	}
	c, err := FromBytes([]byte(b.String()))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func ids(t *testing.T, page [][]byte) []string {
	t.Helper()
	out := []string{}
	for _, raw := range page {
		var m struct{ ID string }
		if err := json.Unmarshal(raw, &m); err != nil {
			t.Fatal(err)
		}
		out = append(out, m.ID)
	}
	return out
}

// Every sort: values high to low (prices low to high first), models
// without the value last, ties by id.
func TestSorts(t *testing.T) {
	c := queryCatalog(t)
	want := map[Sort][]string{
		SortByID:             {"t/a", "t/b", "t/c", "t/d", "t/e"},
		SortPriceLowToHigh:   {"t/d", "t/a", "t/b", "t/e", "t/c"}, // means 0, 2, 2, 2; the router last
		SortPriceHighToLow:   {"t/a", "t/b", "t/e", "t/d", "t/c"},
		SortContextHighToLow: {"t/e", "t/c", "t/a", "t/d", "t/b"},
		SortNewest:           {"t/b", "t/d", "t/c", "t/a", "t/e"},
		SortIntelligence:     {"t/e", "t/a", "t/c", "t/b", "t/d"},
		SortCoding:           {"t/c", "t/e", "t/a", "t/b", "t/d"},
		SortAgentic:          {"t/e", "t/a", "t/b", "t/c", "t/d"},
		SortDesignArena:      {"t/a", "t/d", "t/b", "t/c", "t/e"}, // best rating across arenas
	}
	for s, w := range want {
		page, total := c.Select(Query{Sort: s}, false)
		if got := ids(t, page); !slices.Equal(got, w) || total != 5 {
			t.Errorf("%q: %v (%d), want %v", s, got, total, w)
		}
	}
}

func TestFiltersAndPaging(t *testing.T) {
	c := queryCatalog(t)
	params, err := c.ParseParameters("tools,temperature")
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		q    Query
		want []string
		n    int
	}{
		{Query{OutputModalities: TextOnly}, []string{"t/a", "t/b", "t/c", "t/e"}, 4},
		{Query{OutputModalities: []string{"image"}}, []string{"t/d"}, 1},
		{Query{OutputModalities: []string{"image", "text"}}, []string{"t/a", "t/b", "t/c", "t/d", "t/e"}, 5},
		{Query{OutputModalities: []string{"audio"}}, []string{}, 0},
		{Query{Parameters: params}, []string{"t/a", "t/e"}, 2},
		{Query{Parameters: params, Sort: SortContextHighToLow}, []string{"t/e", "t/a"}, 2},
		{Query{OutputModalities: TextOnly, Offset: 1, Limit: 2}, []string{"t/b", "t/c"}, 4},
		{Query{OutputModalities: TextOnly, Offset: 3, Limit: 2}, []string{"t/e"}, 4},
		{Query{OutputModalities: TextOnly, Offset: 9}, []string{}, 4},
		{Query{Sort: SortNewest, Limit: 1}, []string{"t/b"}, 5},
		{Query{Allow: func(e *Entry) bool { return e.ID != "t/b" }, Limit: 2}, []string{"t/a", "t/c"}, 4},
	}
	for _, tc := range cases {
		page, total := c.Select(tc.q, false)
		if got := ids(t, page); !slices.Equal(got, tc.want) || total != tc.n {
			t.Errorf("%+v: %v of %d, want %v of %d", tc.q, got, total, tc.want, tc.n)
		}
		if n := c.Count(tc.q); n != tc.n {
			t.Errorf("Count(%+v) = %d, want %d", tc.q, n, tc.n)
		}
	}
}

func TestQueryErrors(t *testing.T) {
	c := queryCatalog(t)
	var qe *QueryError
	if _, err := c.ParseParameters("tools,teleport"); !errors.As(err, &qe) || qe.Param != "supported_parameters" || !strings.Contains(qe.Problem, "teleport") {
		t.Errorf("unknown parameter: %v", err)
	}
	if _, err := ParseOutputModalities("text,smell"); !errors.As(err, &qe) || qe.Param != "output_modalities" {
		t.Errorf("unknown modality: %v", err)
	}
	if m, err := ParseOutputModalities("all"); err != nil || m != nil {
		t.Errorf("all: %v, %v", m, err)
	}
	for _, s := range []string{"throughput-high-to-low", "latency-low-to-high", "most-popular", "alphabetical", ""} {
		if _, err := ParseSort(s); !errors.As(err, &qe) || qe.Param != "sort" {
			t.Errorf("sort %q: %v", s, err)
		}
	}
}

// The OpenAI shape adds object and owned_by; the default list is the text
// models, pre-encoded.
func TestOpenAIShapeAndDefaultList(t *testing.T) {
	c := queryCatalog(t)
	page, _ := c.Select(Query{Limit: 1}, true)
	var m map[string]any
	if err := json.Unmarshal(page[0], &m); err != nil || m["object"] != "model" || m["owned_by"] != "t" || m["id"] != "t/a" {
		t.Fatalf("OpenAI item: %s, %v", page[0], err)
	}
	var l struct {
		Object string            `json:"object"`
		Data   []json.RawMessage `json:"data"`
		Links  struct{ Next *string }
		Total  int `json:"total_count"`
	}
	if err := json.Unmarshal(c.DefaultList(true).Body, &l); err != nil || l.Object != "list" || len(l.Data) != 4 || l.Total != 4 || l.Links.Next != nil {
		t.Fatalf("default OpenAI list: %+v, %v", l, err)
	}
	e, _ := c.LookupID("t/a")
	if !strings.HasPrefix(string(e.OpenAIBody), `{"object":"model","owned_by":"t","id":"t/a"`) || e.OpenAIETag == e.ETag {
		t.Errorf("OpenAI entry: %.80s", e.OpenAIBody)
	}
}

// Endpoints as declared, naming the served model; none declared is an
// empty list; variants and aliases answer their model's.
func TestEndpoints(t *testing.T) {
	c := loadTestCatalog(t)
	var a struct {
		Data struct {
			ID           string
			Description  string
			Architecture map[string]any
			Endpoints    []map[string]any
		}
	}
	for _, id := range []string{"acme/rocket", "acme/rocket:nitro", "acme/rocket-classic"} {
		e, ok := c.LookupID(id)
		if !ok {
			t.Fatalf("%s not found", id)
		}
		if err := json.Unmarshal(e.EndpointsBody, &a); err != nil {
			t.Fatal(err)
		}
		if len(a.Data.Endpoints) != 1 || a.Data.Endpoints[0]["tag"] != "acme/fp8" || a.Data.Endpoints[0]["model_id"] != a.Data.ID ||
			a.Data.Endpoints[0]["max_prompt_tokens"] != nil || a.Data.Architecture["tokenizer"] != "GPT" {
			t.Errorf("%s: %s", id, e.EndpointsBody)
		}
		if _, present := a.Data.Endpoints[0]["throughput_last_30m"]; !present {
			t.Errorf("%s: an endpoint leaves out a key instead of null: %s", id, e.EndpointsBody)
		}
	}
	e, _ := c.LookupID("acme/rocket:free")
	if !strings.Contains(string(e.EndpointsBody), `"endpoints":[]`) {
		t.Errorf("a model without endpoints: %s", e.EndpointsBody)
	}
}
