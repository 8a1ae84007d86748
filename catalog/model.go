package catalog

// The types below are the Model object of the API contract and every object
// nested in it, with the contract's exact JSON names. They are also the
// schema of the catalog file: the loader decodes YAML into them with the same
// names (see Load), refusing unknown keys.
//
// Wire rules, kept by the field types:
//   - an optional field that is absent stays absent (pointers and slices with
//     omitempty/omitzero, Nullable for optional fields that may also be null);
//   - a required field that may be null is a pointer or slice without
//     omitempty, so it is written as null when nil;
//   - integers are int64 and stay integers; prices are strings kept verbatim.
//
// The `catalog` struct tag is read by the loader only: "required" means the
// key must be present in the file (it may still be null when the type allows
// it), "nonempty" means a string must not be "".
//
// Values reachable from a *Catalog are shared by every request and must be
// treated as read-only.

// Model is one model of the catalog, as returned by
// GET /api/v1/model/{author}/{slug} inside "data".
type Model struct {
	ID                  string             `json:"id" catalog:"required,nonempty"`
	CanonicalSlug       string             `json:"canonical_slug" catalog:"required,nonempty"`
	Name                string             `json:"name" catalog:"required,nonempty"`
	Created             int64              `json:"created" catalog:"required"`
	Description         *string            `json:"description,omitempty"`
	ContextLength       *int64             `json:"context_length" catalog:"required"`
	ExpirationDate      Nullable[string]   `json:"expiration_date,omitzero"`
	KnowledgeCutoff     Nullable[string]   `json:"knowledge_cutoff,omitzero"`
	HubID               Nullable[string]   `json:"hub_id,omitzero"`
	Pricing             PublicPricing      `json:"pricing" catalog:"required"`
	Architecture        ModelArchitecture  `json:"architecture" catalog:"required"`
	TopProvider         TopProviderInfo    `json:"top_provider" catalog:"required"`
	PerRequestLimits    *PerRequestLimits  `json:"per_request_limits" catalog:"required"`
	SupportedParameters []string           `json:"supported_parameters" catalog:"required"`
	DefaultParameters   *DefaultParameters `json:"default_parameters" catalog:"required"`
	SupportedVoices     []string           `json:"supported_voices" catalog:"required"`
	// Links is required on the wire; in the catalog file it may be left out
	// and is then derived from the id (the base model, without variant).
	Links       ModelLinks        `json:"links"`
	Reasoning   *ModelReasoning   `json:"reasoning,omitempty"`
	AliasTarget *ModelAliasTarget `json:"alias_target,omitempty"`
	Benchmarks  *ModelBenchmarks  `json:"benchmarks,omitempty"`

	// Aliases are other ids ("author/slug", no variant) that resolve to this
	// model. Catalog file only: never encoded.
	Aliases []string `json:"-" yaml:"aliases"`
	// Variants are suffixes ("nitro", "floor") served from this entry as
	// "<id>:<variant>". Catalog file only: never encoded.
	Variants []string `json:"-" yaml:"variants"`
	// Endpoints are the providers serving the model, as the endpoints
	// route answers them; none declared answers an empty list. Catalog
	// file and that route only: never in the model answer.
	Endpoints []Endpoint `json:"-" yaml:"endpoints"`
}

// PublicPricing holds prices in USD as decimal strings, kept exactly as
// written. The top-level keys are the prices under default conditions; see
// Price for the evaluation of overrides and discount. A price of "-1" marks a
// router whose price depends on the routed model.
type PublicPricing struct {
	Prompt            string            `json:"prompt" catalog:"required,nonempty"`
	Completion        string            `json:"completion" catalog:"required,nonempty"`
	Request           string            `json:"request,omitempty" catalog:"nonempty"`
	Image             string            `json:"image,omitempty" catalog:"nonempty"`
	ImageOutput       string            `json:"image_output,omitempty" catalog:"nonempty"`
	ImageToken        string            `json:"image_token,omitempty" catalog:"nonempty"`
	Audio             string            `json:"audio,omitempty" catalog:"nonempty"`
	AudioOutput       string            `json:"audio_output,omitempty" catalog:"nonempty"`
	InputAudioCache   string            `json:"input_audio_cache,omitempty" catalog:"nonempty"`
	InputCacheRead    string            `json:"input_cache_read,omitempty" catalog:"nonempty"`
	InputCacheWrite   string            `json:"input_cache_write,omitempty" catalog:"nonempty"`
	InputCacheWrite1h string            `json:"input_cache_write_1h,omitempty" catalog:"nonempty"`
	InternalReasoning string            `json:"internal_reasoning,omitempty" catalog:"nonempty"`
	WebSearch         string            `json:"web_search,omitempty" catalog:"nonempty"`
	Discount          *float64          `json:"discount,omitempty"`
	Overrides         []PricingOverride `json:"overrides,omitzero"`
}

// PricingOverride is a conditional price override: it applies when all of
// its conditions match (min_prompt_tokens strictly exceeded, the UTC clock in
// [utc_start, utc_end)). Price keys it leaves out inherit the base price.
// The conditions are integers here: token counts and HHMM clock numbers.
type PricingOverride struct {
	MinPromptTokens   *int64 `json:"min_prompt_tokens,omitempty"`
	UTCStart          *int64 `json:"utc_start,omitempty"`
	UTCEnd            *int64 `json:"utc_end,omitempty"`
	Prompt            string `json:"prompt,omitempty" catalog:"nonempty"`
	Completion        string `json:"completion,omitempty" catalog:"nonempty"`
	Audio             string `json:"audio,omitempty" catalog:"nonempty"`
	InputAudioCache   string `json:"input_audio_cache,omitempty" catalog:"nonempty"`
	InputCacheRead    string `json:"input_cache_read,omitempty" catalog:"nonempty"`
	InputCacheWrite   string `json:"input_cache_write,omitempty" catalog:"nonempty"`
	InputCacheWrite1h string `json:"input_cache_write_1h,omitempty" catalog:"nonempty"`
}

// ModelArchitecture describes what a model reads and writes.
type ModelArchitecture struct {
	// Modality is "<input>[+<input>...]-><output>[+<output>...]" or null.
	Modality         *string          `json:"modality" catalog:"required"`
	InputModalities  []string         `json:"input_modalities" catalog:"required"`
	OutputModalities []string         `json:"output_modalities" catalog:"required"`
	InstructType     Nullable[string] `json:"instruct_type,omitzero"`
	Tokenizer        string           `json:"tokenizer,omitempty" catalog:"nonempty"`
}

// TopProviderInfo describes the limits of the model's best provider.
type TopProviderInfo struct {
	ContextLength       Nullable[int64] `json:"context_length,omitzero"`
	IsModerated         bool            `json:"is_moderated" catalog:"required"`
	MaxCompletionTokens Nullable[int64] `json:"max_completion_tokens,omitzero"`
}

// PerRequestLimits caps the tokens of one request.
type PerRequestLimits struct {
	PromptTokens     float64 `json:"prompt_tokens" catalog:"required"`
	CompletionTokens float64 `json:"completion_tokens" catalog:"required"`
}

// DefaultParameters are the model's default sampling parameters. Each key may
// be absent, null or a number.
type DefaultParameters struct {
	Temperature       Nullable[float64] `json:"temperature,omitzero"`
	TopP              Nullable[float64] `json:"top_p,omitzero"`
	TopK              Nullable[int64]   `json:"top_k,omitzero"`
	FrequencyPenalty  Nullable[float64] `json:"frequency_penalty,omitzero"`
	PresencePenalty   Nullable[float64] `json:"presence_penalty,omitzero"`
	RepetitionPenalty Nullable[float64] `json:"repetition_penalty,omitzero"`
}

// ModelLinks holds related resource paths.
type ModelLinks struct {
	// Details is /api/v1/models/<author>/<slug>/endpoints of the base model
	// (never with a variant suffix).
	Details string `json:"details" catalog:"required,nonempty"`
}

// ModelReasoning describes a reasoning model's controls.
type ModelReasoning struct {
	Mandatory      bool             `json:"mandatory" catalog:"required"`
	DefaultEffort  Nullable[string] `json:"default_effort,omitzero"`
	DefaultEnabled *bool            `json:"default_enabled,omitempty"`
	// SupportedEfforts is absent, null (no allowlist) or the allowed efforts,
	// highest first.
	SupportedEfforts Nullable[[]string] `json:"supported_efforts,omitzero"`
	// SupportsMaxTokens is written only when true, as the contract says; a
	// false in the catalog file is therefore dropped.
	SupportsMaxTokens bool `json:"supports_max_tokens,omitempty"`
}

// ModelAliasTarget names the concrete model behind a tilde-latest alias.
type ModelAliasTarget struct {
	Slug string `json:"slug" catalog:"required,nonempty"`
	Name string `json:"name" catalog:"required,nonempty"`
}

// ModelBenchmarks holds public benchmark results.
type ModelBenchmarks struct {
	ArenaBenchmark []ArenaEntry `json:"arena_benchmark" catalog:"required"`
	IndexBenchmark *IndexEntry  `json:"index_benchmark,omitempty"`
}

// ArenaEntry is one head-to-head arena result.
type ArenaEntry struct {
	Arena    string  `json:"arena" catalog:"required,nonempty"`
	Category string  `json:"category" catalog:"required,nonempty"`
	Rating   float64 `json:"rating" catalog:"required"`
	WinRate  float64 `json:"win_rate" catalog:"required"`
	Rank     int64   `json:"rank" catalog:"required"`
}

// IndexEntry holds composite index scores; each may be null.
type IndexEntry struct {
	IntelligenceIndex *float64 `json:"intelligence_index" catalog:"required"`
	CodingIndex       *float64 `json:"coding_index" catalog:"required"`
	AgenticIndex      *float64 `json:"agentic_index" catalog:"required"`
}
