package console

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/aigateway/gateway/catalog"
	"github.com/aigateway/gateway/client"
)

// A description's Markdown becomes plain text: what a person reads stays,
// the markup goes, and nothing of it can become HTML (the template
// escapes the text it is given).
func TestParagraphs(t *testing.T) {
	for _, tc := range []struct {
		name, md string
		want     []string
	}{
		{"plain", "A fast model.", []string{"A fast model."}},
		{"link", "Fine-tuned on [Qwen2.5 72B](https://example.com/qwen) and ![a chart](/c.png).",
			[]string{"Fine-tuned on Qwen2.5 72B and a chart."}},
		{"reference link", "See [the docs][1].", []string{"See the docs."}},
		{"link cut short by the source", "Set it on the [pareto-router plugin](https://example.com/docs/pareto-rou",
			[]string{"Set it on the pareto-router plugin"}},
		{"bracket that is no link", "Arrays [1, 2] stay.", []string{"Arrays [1, 2] stay."}},
		{"autolink", "Docs: <https://example.com/a>.", []string{"Docs: https://example.com/a."}},
		{"emphasis", "**Note:** heavily *rate limited* by __them__ and _here_.",
			[]string{"Note: heavily rate limited by them and here."}},
		{"emphasis beside punctuation", "(*really*) fast.** It works.", []string{"(really) fast. It works."}},
		{"strikethrough", "~~old~~ new, ~author/model-latest stays", []string{"old new, ~author/model-latest stays"}},
		{"markers inside words stay", "Set min_coding_score and reasoning_effort; 2*3 = 6; a * b.",
			[]string{"Set min_coding_score and reasoning_effort; 2*3 = 6; a * b."}},
		{"code", "Version `mistral-large-2407`.", []string{"Version mistral-large-2407."}},
		{"escapes", `A literal \*star\* and \[bracket\].`, []string{"A literal *star* and [bracket]."}},
		{"headings and paragraphs", "## Overview ##\nLine one\nline two.\n\n#multimodal",
			[]string{"Overview", "Line one line two.", "#multimodal"}},
		{"lists and quotes", "Strengths:\n- coding\n* math\n1. first\n> quoted *text*",
			[]string{"Strengths:", "• coding", "• math", "1. first", "quoted text"}},
		{"markup stays text", `<script>alert(1)</script> & <b>bold</b>`, []string{`<script>alert(1)</script> & <b>bold</b>`}},
		{"source's cut", "Built on a 256K context...", []string{"Built on a 256K context…"}},
		{"source's cut after punctuation", "Strong at coding,...", []string{"Strong at coding…"}},
		{"source's cut after a sentence", "More engaging....", []string{"More engaging…"}},
		{"empty", "", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := paragraphs(tc.md); !slices.Equal(got, tc.want) {
				t.Errorf("paragraphs(%q) = %q, want %q", tc.md, got, tc.want)
			}
		})
	}
}

// The list's summary ends at a word boundary with an ellipsis, never
// inside a word, and is the whole text when that is short enough.
func TestSummary(t *testing.T) {
	long := "Jamba Large 1.7 is the latest model in the Jamba open family, offering improvements in grounding, " +
		"instruction-following, and overall efficiency. Built on a hybrid SSM-Transformer architecture."
	got := summary(long, 80)
	if want := "Jamba Large 1.7 is the latest model in the Jamba open family, offering…"; got != want {
		t.Errorf("summary = %q, want %q", got, want)
	}
	if got := summary("**Short** and [linked](https://x.example).", 80); got != "Short and linked." {
		t.Errorf("short summary = %q", got)
	}
	if got := summary(strings.Repeat("ü", 100), 10); got != strings.Repeat("ü", 10)+"…" {
		t.Errorf("a word longer than the summary: %q", got)
	}
	// Every description of the shipped catalog: within the length, cut at
	// a word, valid UTF-8, no markup left.
	for _, d := range shippedDescriptions(t) {
		s := summary(d, summaryLength)
		head := strings.TrimSuffix(s, "…")
		text := strings.Join(paragraphs(d), " ")
		switch {
		case utf8.RuneCountInString(s) > summaryLength+1 || !utf8.ValidString(s):
			t.Errorf("summary of %.40q… is %d characters", d, utf8.RuneCountInString(s))
		case !strings.HasPrefix(text, head):
			t.Errorf("summary %q is not the start of the text %.80q…", s, text)
		case len(head) < len(text) && !strings.HasSuffix(s, "…"):
			t.Errorf("summary %q was cut without an ellipsis", s)
		case len(head) < len(strings.TrimSuffix(text, "…")) && text[len(head)] != ' ' && !strings.ContainsRune(",;:( ", rune(text[len(head)])):
			t.Errorf("summary %q cuts a word of %.80q…", s, text)
		case strings.Contains(s, "](") || strings.Contains(s, "**"):
			t.Errorf("summary %q keeps Markdown", s)
		}
	}
}

// shippedDescriptions are the descriptions of the catalog the gateway
// ships.
func shippedDescriptions(t *testing.T) []string {
	t.Helper()
	c, err := catalog.Load("../../configs/models.yaml")
	if err != nil {
		t.Fatal(err)
	}
	page, _ := c.Select(catalog.Query{}, false)
	var out []string
	for _, raw := range page {
		var m client.Model
		if err := json.Unmarshal(raw, &m); err != nil {
			t.Fatal(err)
		}
		out = append(out, m.Description)
	}
	if len(out) < 100 {
		t.Fatalf("read %d descriptions of the shipped catalog", len(out))
	}
	return out
}

func TestTokens(t *testing.T) {
	n := func(v int64) *int64 { return &v }
	for _, tc := range []struct {
		in   *int64
		want string
	}{{n(256000), "256,000 tokens"}, {n(1048576), "1,048,576 tokens"}, {n(512), "512 tokens"}, {nil, ""}, {n(0), ""}} {
		if got := tokens(tc.in); got != tc.want {
			t.Errorf("tokens(%v) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// Every sort offered is one the API serves, named in words.
func TestModelSortsInWords(t *testing.T) {
	seen := map[string]bool{}
	for _, s := range modelSorts {
		if _, err := catalog.ParseSort(s.Value); err != nil {
			t.Errorf("sort %q is not the API's: %v", s.Value, err)
		}
		if s.Label == "" || strings.Contains(s.Label, "-") || seen[s.Label] {
			t.Errorf("sort %q is named %q", s.Value, s.Label)
		}
		seen[s.Label] = true
	}
	if got := modelSorts[len(modelSorts)-1]; got.Value != "design-arena-elo-high-to-low" || got.Label != "Design Arena Elo, high to low" {
		t.Errorf("design arena sort: %+v", got)
	}
}

// The search matches a part of the id or the name, whatever the case;
// each word of it must be found.
func TestMatching(t *testing.T) {
	models := []client.Model{
		{ID: "anthropic/claude-3-haiku", Name: "Anthropic: Claude 3 Haiku"},
		{ID: "openai/gpt-4o", Name: "OpenAI: GPT-4o"},
		{ID: "mistralai/codestral-2508", Name: "Mistral: Codestral 2508"},
	}
	for _, tc := range []struct {
		search string
		want   []string
	}{
		{"HAIKU", []string{"anthropic/claude-3-haiku"}},
		{"gpt-4", []string{"openai/gpt-4o"}},
		{"mistral:", []string{"mistralai/codestral-2508"}},
		{"claude  HAIKU", []string{"anthropic/claude-3-haiku"}},
		{"openai codestral", nil},
		{"a", []string{"anthropic/claude-3-haiku", "openai/gpt-4o", "mistralai/codestral-2508"}},
		{"nothing", nil},
	} {
		var got []string
		for _, m := range matching(slices.Clone(models), tc.search) {
			got = append(got, m.ID)
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("matching %q = %v, want %v", tc.search, got, tc.want)
		}
	}
}
