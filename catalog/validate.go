package catalog

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"
)

var (
	// segmentRE is one id part (author, slug or variant).
	segmentRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*$`)
	// priceRE is a non-negative decimal without exponent, as the contract
	// writes prices; "-1" (routers) is checked separately.
	priceRE = regexp.MustCompile(`^(0|[1-9][0-9]*)(\.[0-9]+)?$`)
)

// RouterPrice marks a router model whose price depends on the routed model.
const RouterPrice = "-1"

// ID is a parsed model id: [~]author/slug[:variant].
type ID struct {
	Author  string // includes the leading "~" of a tilde alias
	Slug    string // without the variant
	Variant string // "" when there is none
}

// Tilde reports whether the id is a "~author/name" alias.
func (id ID) Tilde() bool { return strings.HasPrefix(id.Author, "~") }

// Base returns "author/slug" without the variant.
func (id ID) Base() string { return id.Author + "/" + id.Slug }

// String returns the id as written.
func (id ID) String() string {
	if id.Variant == "" {
		return id.Base()
	}
	return id.Base() + ":" + id.Variant
}

// ParseID parses "author/slug", "author/slug:variant" or "~author/slug".
// Each part starts with a letter or digit and continues with letters,
// digits, '.', '_' or '-'; a tilde alias has no variant.
func ParseID(s string) (ID, bool) {
	author, rest, ok := strings.Cut(s, "/")
	if !ok {
		return ID{}, false
	}
	slug, variant, hasVariant := strings.Cut(rest, ":")
	a := strings.TrimPrefix(author, "~")
	tilde := len(a) != len(author)
	if !segmentRE.MatchString(a) || !segmentRE.MatchString(slug) {
		return ID{}, false
	}
	if hasVariant && (tilde || !segmentRE.MatchString(variant)) {
		return ID{}, false
	}
	return ID{Author: author, Slug: slug, Variant: variant}, true
}

// detailsPath is the links.details value of a base id.
func detailsPath(base string) string { return "/api/v1/models/" + base + "/endpoints" }

// validator checks a decoded file against the contract and the catalog
// file's own rules (DESIGN.md §5). Models that did not decode cleanly skip
// the per-model checks (their zero values would only add noise) but still
// take part in the checks between entries.
type validator struct {
	f        *file
	problems []Problem
	// notes are accepted but worth an operator's look (Catalog.Notes).
	notes []Problem
}

func (v *validator) add(i int, path, format string, args ...any) {
	m := &v.f.models[i]
	name := m.ID
	if name == "" {
		name = fmt.Sprintf("models[%d]", i)
	}
	v.problems = append(v.problems, Problem{Line: v.line(i, path), Model: name, Field: path, Message: fmt.Sprintf(format, args...)})
}

// line finds the line of path in models[i], or of its nearest ancestor.
func (v *validator) line(i int, path string) int {
	lines := v.f.lines[i]
	for {
		if l, ok := lines[path]; ok {
			return l
		}
		if path == "" {
			return 0
		}
		cut := max(strings.LastIndexByte(path, '.'), strings.LastIndexByte(path, '['))
		if cut < 0 {
			path = ""
		} else {
			path = path[:cut]
		}
	}
}

// note records something accepted but worth a warning.
func (v *validator) note(i int, path, format string, args ...any) {
	n := len(v.problems)
	v.add(i, path, format, args...)
	v.notes = append(v.notes, v.problems[n])
	v.problems = v.problems[:n]
}

func validateFile(f *file) (problems, notes []Problem) {
	v := &validator{f: f}
	byID := make(map[string]int, len(f.models))
	for i := range f.models {
		m := &f.models[i]
		if !f.broken[i] {
			v.model(i, m)
		}
		if _, ok := ParseID(m.ID); !ok {
			continue
		}
		if j, dup := byID[m.ID]; dup {
			v.add(i, "id", "duplicate id (first at line %d)", v.line(j, ""))
			continue
		}
		byID[m.ID] = i
	}
	v.crossChecks(byID)
	return v.problems, v.notes
}

func (v *validator) model(i int, m *Model) {
	id, idOK := ParseID(m.ID)
	if !idOK {
		v.add(i, "id", "%q is not author/slug, author/slug:variant or ~author/slug", m.ID)
	}
	if _, ok := ParseID(m.CanonicalSlug); !ok {
		v.add(i, "canonical_slug", "%q is not author/slug[:variant]", m.CanonicalSlug)
	}
	if m.Created <= 0 {
		v.add(i, "created", "must be a positive Unix timestamp")
	}
	if m.ContextLength != nil && *m.ContextLength <= 0 {
		v.add(i, "context_length", "must be positive or null")
	}
	v.date(i, "expiration_date", m.ExpirationDate)
	v.date(i, "knowledge_cutoff", m.KnowledgeCutoff)
	v.pricing(i, "pricing", &m.Pricing)
	v.endpoints(i, m)
	v.architecture(i, &m.Architecture)
	if c, ok := m.TopProvider.ContextLength.Get(); ok && c <= 0 {
		v.add(i, "top_provider.context_length", "must be positive or null")
	}
	if c, ok := m.TopProvider.MaxCompletionTokens.Get(); ok && c <= 0 {
		v.add(i, "top_provider.max_completion_tokens", "must be positive or null")
	}
	if l := m.PerRequestLimits; l != nil {
		if l.PromptTokens < 0 {
			v.add(i, "per_request_limits.prompt_tokens", "must not be negative")
		}
		if l.CompletionTokens < 0 {
			v.add(i, "per_request_limits.completion_tokens", "must not be negative")
		}
	}
	if m.SupportedParameters == nil {
		v.add(i, "supported_parameters", "must be a list (it may be empty), not null")
	}
	v.enumList(i, "supported_parameters", m.SupportedParameters, parameters)
	v.defaults(i, m.DefaultParameters)
	v.enumList(i, "supported_voices", m.SupportedVoices, nil)
	if idOK && m.Links.Details != "" {
		// The base model may be named by its id or, as the public catalog
		// does, by its canonical slug; never with a variant.
		byID := detailsPath(id.Base())
		canon, canonOK := ParseID(m.CanonicalSlug)
		byCanon := detailsPath(canon.Base())
		switch {
		case m.Links.Details == byID || (canonOK && m.Links.Details == byCanon):
		case canonOK && byCanon != byID:
			v.add(i, "links.details", "must be %q or %q (the base model by id or canonical slug, without variant), or be left out to be derived", byID, byCanon)
		default:
			v.add(i, "links.details", "must be %q (the base model, without variant), or be left out to be derived", byID)
		}
	}
	v.reasoning(i, m.Reasoning)
	if idOK {
		switch {
		case id.Tilde() && m.AliasTarget == nil:
			v.add(i, "alias_target", "a ~ alias entry must name its target in alias_target")
		case !id.Tilde() && m.AliasTarget != nil:
			v.add(i, "alias_target", "only ~ alias entries carry alias_target")
		}
	}
	if b := m.Benchmarks; b != nil {
		if b.ArenaBenchmark == nil {
			v.add(i, "benchmarks.arena_benchmark", "must be a list (it may be empty), not null")
		}
		for j, e := range b.ArenaBenchmark {
			p := fmt.Sprintf("benchmarks.arena_benchmark[%d]", j)
			if e.Rank < 1 {
				v.add(i, p+".rank", "must be 1 or more")
			}
			if e.WinRate < 0 || e.WinRate > 100 {
				v.add(i, p+".win_rate", "must be a percentage (0 to 100)")
			}
		}
	}
	if idOK && (id.Tilde() || id.Variant != "") {
		if len(m.Aliases) > 0 {
			v.add(i, "aliases", "aliases belong on a base entry (no variant, no ~)")
		}
		if len(m.Variants) > 0 {
			v.add(i, "variants", "variants belong on a base entry (no variant, no ~)")
		}
	}
	for j, a := range m.Aliases {
		if aid, ok := ParseID(a); !ok || aid.Tilde() || aid.Variant != "" {
			v.add(i, fmt.Sprintf("aliases[%d]", j), "%q is not author/slug (no variant; ~ aliases go under latest)", a)
		}
	}
	seen := map[string]bool{}
	for j, s := range m.Variants {
		p := fmt.Sprintf("variants[%d]", j)
		switch {
		case !segmentRE.MatchString(s):
			v.add(i, p, "%q is not a variant name (letters, digits, '.', '_', '-')", s)
		case seen[s]:
			v.add(i, p, "duplicate variant %q", s)
		}
		seen[s] = true
	}
}

func (v *validator) date(i int, path string, n Nullable[string]) {
	s, ok := n.Get()
	if !ok {
		return
	}
	if _, err := time.Parse(time.DateOnly, s); err != nil {
		v.add(i, path, "%q is not a date YYYY-MM-DD", s)
	}
}

func (v *validator) price(i int, path, s string, routerOK bool) {
	if s == "" || priceRE.MatchString(s) {
		return
	}
	if s == RouterPrice && routerOK {
		return
	}
	v.add(i, path, "%q is not a decimal price in USD (digits with an optional fraction, no exponent)", s)
}

// pricing validates the prices at path ("pricing" of a model,
// "endpoints[j].pricing" of an endpoint).
func (v *validator) pricing(i int, at string, p *PublicPricing) {
	v.price(i, at+".prompt", p.Prompt, true)
	v.price(i, at+".completion", p.Completion, true)
	for _, k := range []struct{ name, value string }{
		{"request", p.Request}, {"image", p.Image}, {"image_output", p.ImageOutput},
		{"image_token", p.ImageToken}, {"audio", p.Audio}, {"audio_output", p.AudioOutput},
		{"input_audio_cache", p.InputAudioCache}, {"input_cache_read", p.InputCacheRead},
		{"input_cache_write", p.InputCacheWrite}, {"input_cache_write_1h", p.InputCacheWrite1h},
		{"internal_reasoning", p.InternalReasoning}, {"web_search", p.WebSearch},
	} {
		v.price(i, at+"."+k.name, k.value, false)
	}
	if p.Discount != nil && (*p.Discount < 0 || *p.Discount > 1) {
		v.add(i, at+".discount", "must be a fraction from 0 to 1")
	}
	for j, o := range p.Overrides {
		path := fmt.Sprintf("%s.overrides[%d]", at, j)
		keys := 0
		for _, k := range []struct{ name, value string }{
			{"prompt", o.Prompt}, {"completion", o.Completion}, {"audio", o.Audio},
			{"input_audio_cache", o.InputAudioCache}, {"input_cache_read", o.InputCacheRead},
			{"input_cache_write", o.InputCacheWrite}, {"input_cache_write_1h", o.InputCacheWrite1h},
		} {
			if k.value != "" {
				keys++
			}
			v.price(i, path+"."+k.name, k.value, false)
		}
		if keys == 0 {
			v.add(i, path, "sets no price")
		}
		if o.MinPromptTokens != nil && *o.MinPromptTokens < 0 {
			v.add(i, path+".min_prompt_tokens", "must not be negative")
		}
		switch {
		case (o.UTCStart == nil) != (o.UTCEnd == nil):
			v.add(i, path, "utc_start and utc_end go together")
		case o.UTCStart != nil:
			okStart, okEnd := validHHMM(*o.UTCStart), validHHMM(*o.UTCEnd)
			if !okStart {
				v.add(i, path+".utc_start", "%d is not an HHMM time (hour 0-23, minute 0-59)", *o.UTCStart)
			}
			if !okEnd {
				v.add(i, path+".utc_end", "%d is not an HHMM time (hour 0-23, minute 0-59)", *o.UTCEnd)
			}
			if okStart && okEnd && *o.UTCStart == *o.UTCEnd {
				v.add(i, path+".utc_end", "equals utc_start: the window [start, end) would be empty")
			}
		case o.MinPromptTokens == nil:
			// The top-level keys must stay the price under default
			// conditions, which an unconditional override would contradict.
			v.add(i, path, "has no condition (min_prompt_tokens or utc_start/utc_end), so it would always apply")
		}
	}
}

func validHHMM(t int64) bool { return t >= 0 && t/100 <= 23 && t%100 <= 59 }

func (v *validator) architecture(i int, a *ModelArchitecture) {
	if a.InputModalities == nil {
		v.add(i, "architecture.input_modalities", "must be a list, not null")
	} else if len(a.InputModalities) == 0 {
		v.add(i, "architecture.input_modalities", "must not be empty")
	}
	if a.OutputModalities == nil {
		v.add(i, "architecture.output_modalities", "must be a list, not null")
	} else if len(a.OutputModalities) == 0 {
		v.add(i, "architecture.output_modalities", "must not be empty")
	}
	v.enumList(i, "architecture.input_modalities", a.InputModalities, inputModalities)
	v.enumList(i, "architecture.output_modalities", a.OutputModalities, outputModalities)
	if a.Modality != nil {
		in, out, ok := strings.Cut(*a.Modality, "->")
		ins, outs := strings.Split(in, "+"), strings.Split(out, "+")
		if !ok || !allIn(ins, inputModalities) || !allIn(outs, outputModalities) {
			v.add(i, "architecture.modality", "%q is not <input>[+<input>...]-><output>[+<output>...] with known modalities", *a.Modality)
		} else if !subset(ins, a.InputModalities) || !subset(outs, a.OutputModalities) {
			v.add(i, "architecture.modality", "%q names modalities missing from input_modalities or output_modalities", *a.Modality)
		} else if !sameSet(ins, a.InputModalities) || !sameSet(outs, a.OutputModalities) {
			// The spec calls modality the primary one: a model that also
			// takes images may say text->text. Accepted, and said.
			v.note(i, "architecture.modality", "%q names fewer modalities than input_modalities and output_modalities (taken as the primary modality)", *a.Modality)
		}
	}
	if t, ok := a.InstructType.Get(); ok && !instructTypes[t] {
		v.add(i, "architecture.instruct_type", "unknown instruct type %q", t)
	}
	if a.Tokenizer != "" && !tokenizers[a.Tokenizer] {
		v.add(i, "architecture.tokenizer", "unknown tokenizer group %q", a.Tokenizer)
	}
}

func allIn(values []string, allowed map[string]bool) bool {
	for _, s := range values {
		if !allowed[s] {
			return false
		}
	}
	return true
}

// subset reports whether every value of a is in b.
func subset(a, b []string) bool {
	for _, s := range a {
		if !slices.Contains(b, s) {
			return false
		}
	}
	return true
}

func sameSet(a, b []string) bool {
	for _, s := range a {
		if !slices.Contains(b, s) {
			return false
		}
	}
	for _, s := range b {
		if !slices.Contains(a, s) {
			return false
		}
	}
	return true
}

// enumList checks a list for duplicates and, when allowed is not nil, for
// values outside it.
func (v *validator) enumList(i int, path string, values []string, allowed map[string]bool) {
	seen := make(map[string]bool, len(values))
	for j, s := range values {
		p := fmt.Sprintf("%s[%d]", path, j)
		switch {
		case allowed != nil && !allowed[s]:
			v.add(i, p, "unknown value %q", s)
		case seen[s]:
			v.add(i, p, "duplicate value %q", s)
		}
		seen[s] = true
	}
}

func (v *validator) defaults(i int, d *DefaultParameters) {
	if d == nil {
		return
	}
	if t, ok := d.Temperature.Get(); ok && t < 0 {
		v.add(i, "default_parameters.temperature", "must not be negative")
	}
	if p, ok := d.TopP.Get(); ok && (p < 0 || p > 1) {
		v.add(i, "default_parameters.top_p", "must be from 0 to 1")
	}
	if k, ok := d.TopK.Get(); ok && k < 0 {
		v.add(i, "default_parameters.top_k", "must not be negative")
	}
}

func (v *validator) reasoning(i int, r *ModelReasoning) {
	if r == nil {
		return
	}
	def, hasDef := r.DefaultEffort.Get()
	if hasDef {
		if _, ok := effortRank[def]; !ok {
			v.add(i, "reasoning.default_effort", "unknown effort %q", def)
		}
		if r.Mandatory && def == "none" {
			v.add(i, "reasoning.default_effort", "is none but reasoning is mandatory")
		}
	}
	efforts, ok := r.SupportedEfforts.Get()
	if !ok {
		return
	}
	last := -1
	for j, e := range efforts {
		p := fmt.Sprintf("reasoning.supported_efforts[%d]", j)
		rank, known := effortRank[e]
		switch {
		case !known:
			v.add(i, p, "unknown effort %q", e)
			continue
		case rank <= last:
			v.add(i, p, "%q is out of order or repeated (highest effort first: max, xhigh, high, medium, low, minimal, none)", e)
		case r.Mandatory && e == "none":
			v.add(i, p, "none is listed but reasoning is mandatory")
		}
		last = max(last, rank)
	}
	if hasDef && !slices.Contains(efforts, def) {
		v.add(i, "reasoning.default_effort", "%q is not among supported_efforts", def)
	}
}

// crossChecks verifies references between entries: alias targets, aliases
// that would shadow ids or each other, and the latest map.
func (v *validator) crossChecks(byID map[string]int) {
	f := v.f
	target := func(s string) bool {
		j, ok := byID[s]
		if !ok {
			return false
		}
		id, _ := ParseID(f.models[j].ID)
		return !id.Tilde()
	}
	for i := range f.models {
		if at := f.models[i].AliasTarget; at != nil && at.Slug != "" && !target(at.Slug) {
			v.add(i, "alias_target.slug", "%q is not the id of a model in this catalog (nor a ~ alias)", at.Slug)
		}
	}
	// owner maps every name that resolves to something to where it was
	// declared, so that no name can mean two things.
	owner := make(map[string]string, len(byID))
	for id := range byID {
		owner[id] = "the id of a model"
	}
	for i := range f.models {
		for j, a := range f.models[i].Aliases {
			if prev, taken := owner[a]; taken {
				v.add(i, fmt.Sprintf("aliases[%d]", j), "%q is already %s", a, prev)
				continue
			}
			owner[a] = "an alias of " + f.models[i].ID
		}
	}
	for _, l := range f.latest {
		path := "latest." + l.alias
		add := func(format string, args ...any) {
			v.problems = append(v.problems, Problem{Line: l.line, Field: path, Message: fmt.Sprintf(format, args...)})
		}
		if id, ok := ParseID(l.alias); !ok || !id.Tilde() {
			add("%q is not ~author/name", l.alias)
		} else if prev, taken := owner[l.alias]; taken {
			add("%q is already %s", l.alias, prev)
		}
		owner[l.alias] = "a latest alias"
		if !target(l.target) {
			add("target %q is not the id of a model in this catalog (nor a ~ alias)", l.target)
		}
	}
}
