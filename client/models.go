package client

import (
	"context"
	"encoding/json"
	"errors"
	"net/url"
	"strconv"
	"strings"
)

// Model is one model of the catalog. Fields the spec marks "or null" are
// pointers (nil: null or absent).
type Model struct {
	ID                  string             `json:"id"`
	CanonicalSlug       string             `json:"canonical_slug"`
	Name                string             `json:"name"`
	Created             int64              `json:"created"`
	Description         string             `json:"description,omitempty"`
	ContextLength       *int64             `json:"context_length"`
	ExpirationDate      *string            `json:"expiration_date,omitempty"`
	KnowledgeCutoff     *string            `json:"knowledge_cutoff,omitempty"`
	HubID               *string            `json:"hub_id,omitempty"`
	Pricing             Pricing            `json:"pricing"`
	Architecture        Architecture       `json:"architecture"`
	TopProvider         TopProvider        `json:"top_provider"`
	PerRequestLimits    *PerRequestLimits  `json:"per_request_limits"`
	SupportedParameters []string           `json:"supported_parameters"`
	DefaultParameters   *DefaultParameters `json:"default_parameters"`
	SupportedVoices     []string           `json:"supported_voices"`
	Links               struct {
		Details string `json:"details"`
	} `json:"links"`
	Reasoning   *Reasoning   `json:"reasoning,omitempty"`
	AliasTarget *AliasTarget `json:"alias_target,omitempty"`
	Benchmarks  *Benchmarks  `json:"benchmarks,omitempty"`
}

// Pricing holds prices in USD as decimal strings, as the gateway sends
// them (no rounding through float64).
type Pricing struct {
	Prompt            string            `json:"prompt"`
	Completion        string            `json:"completion"`
	Request           string            `json:"request,omitempty"`
	Image             string            `json:"image,omitempty"`
	ImageOutput       string            `json:"image_output,omitempty"`
	ImageToken        string            `json:"image_token,omitempty"`
	Audio             string            `json:"audio,omitempty"`
	AudioOutput       string            `json:"audio_output,omitempty"`
	InputAudioCache   string            `json:"input_audio_cache,omitempty"`
	InputCacheRead    string            `json:"input_cache_read,omitempty"`
	InputCacheWrite   string            `json:"input_cache_write,omitempty"`
	InputCacheWrite1h string            `json:"input_cache_write_1h,omitempty"`
	InternalReasoning string            `json:"internal_reasoning,omitempty"`
	WebSearch         string            `json:"web_search,omitempty"`
	Discount          *float64          `json:"discount,omitempty"`
	Overrides         []PricingOverride `json:"overrides,omitempty"`
}

// PricingOverride is a conditional price: it applies when all its
// conditions hold; later ones win per price key.
type PricingOverride struct {
	MinPromptTokens   *float64 `json:"min_prompt_tokens,omitempty"`
	UTCStart          *float64 `json:"utc_start,omitempty"`
	UTCEnd            *float64 `json:"utc_end,omitempty"`
	Prompt            string   `json:"prompt,omitempty"`
	Completion        string   `json:"completion,omitempty"`
	Audio             string   `json:"audio,omitempty"`
	InputAudioCache   string   `json:"input_audio_cache,omitempty"`
	InputCacheRead    string   `json:"input_cache_read,omitempty"`
	InputCacheWrite   string   `json:"input_cache_write,omitempty"`
	InputCacheWrite1h string   `json:"input_cache_write_1h,omitempty"`
}

// Architecture describes a model's modalities and formats.
type Architecture struct {
	Modality         *string  `json:"modality"`
	InputModalities  []string `json:"input_modalities"`
	OutputModalities []string `json:"output_modalities"`
	InstructType     *string  `json:"instruct_type,omitempty"`
	Tokenizer        string   `json:"tokenizer,omitempty"`
}

// TopProvider is what the best provider of the model offers.
type TopProvider struct {
	ContextLength       *int64 `json:"context_length,omitempty"`
	IsModerated         bool   `json:"is_moderated"`
	MaxCompletionTokens *int64 `json:"max_completion_tokens,omitempty"`
}

// PerRequestLimits bounds the tokens of one request.
type PerRequestLimits struct {
	PromptTokens     float64 `json:"prompt_tokens"`
	CompletionTokens float64 `json:"completion_tokens"`
}

// DefaultParameters are the model's default sampling parameters.
type DefaultParameters struct {
	Temperature       *float64 `json:"temperature,omitempty"`
	TopP              *float64 `json:"top_p,omitempty"`
	TopK              *int64   `json:"top_k,omitempty"`
	FrequencyPenalty  *float64 `json:"frequency_penalty,omitempty"`
	PresencePenalty   *float64 `json:"presence_penalty,omitempty"`
	RepetitionPenalty *float64 `json:"repetition_penalty,omitempty"`
}

// Reasoning describes a reasoning model's settings.
type Reasoning struct {
	Mandatory         bool     `json:"mandatory"`
	DefaultEffort     *string  `json:"default_effort,omitempty"`
	DefaultEnabled    *bool    `json:"default_enabled,omitempty"`
	SupportedEfforts  []string `json:"supported_efforts,omitempty"`
	SupportsMaxTokens bool     `json:"supports_max_tokens,omitempty"`
}

// AliasTarget is the concrete model a ~author/name-latest alias stands for.
type AliasTarget struct {
	Slug string `json:"slug"`
	Name string `json:"name"`
}

// Benchmarks are the model's published benchmark results.
type Benchmarks struct {
	Arena []struct {
		Arena    string  `json:"arena"`
		Category string  `json:"category"`
		Rating   float64 `json:"rating"`
		WinRate  float64 `json:"win_rate"`
		Rank     int     `json:"rank"`
	} `json:"arena_benchmark"`
	Index *struct {
		Intelligence *float64 `json:"intelligence_index"`
		Coding       *float64 `json:"coding_index"`
		Agentic      *float64 `json:"agentic_index"`
	} `json:"index_benchmark,omitempty"`
}

// GetModel returns the model with id "author/slug" (a variant
// "author/slug:free" and a "~author/name-latest" alias work too).
func (c *Client) GetModel(ctx context.Context, id string) (*Model, error) {
	path, err := modelPath(id)
	if err != nil {
		return nil, err
	}
	return getData[Model](ctx, c, "/model/"+path, nil)
}

// errModelID: a model id is not of the form author/slug.
var errModelID = errors.New("client: a model id is author/slug")

// modelPath is the model id "author/slug" as two escaped path segments.
func modelPath(id string) (string, error) {
	author, slug, ok := strings.Cut(id, "/")
	if !ok || author == "" || slug == "" {
		return "", errModelID
	}
	return url.PathEscape(author) + "/" + url.PathEscape(slug), nil
}

// ListModels returns every model of the catalog (whatever its output),
// sorted by id.
func (c *Client) ListModels(ctx context.Context) ([]Model, error) {
	p, err := c.QueryModels(ctx, ModelQuery{OutputModalities: []string{"all"}})
	if err != nil {
		return nil, err
	}
	return p.Models, nil
}

// ModelQuery filters, sorts and pages a model list; the zero value is the
// gateway's default (the models with text output, by id, all of them).
type ModelQuery struct {
	// OutputModalities: a model must output one of them; "all" for any.
	OutputModalities []string
	// SupportedParameters: a model must support every one.
	SupportedParameters []string
	// Sort is one of the gateway's sorts ("pricing-low-to-high",
	// "context-high-to-low", "newest", ...); empty: by id.
	Sort          string
	Offset, Limit int
}

func (q ModelQuery) values() url.Values {
	v := url.Values{}
	if len(q.OutputModalities) > 0 {
		v.Set("output_modalities", strings.Join(q.OutputModalities, ","))
	}
	if len(q.SupportedParameters) > 0 {
		v.Set("supported_parameters", strings.Join(q.SupportedParameters, ","))
	}
	if q.Sort != "" {
		v.Set("sort", q.Sort)
	}
	if q.Offset > 0 {
		v.Set("offset", strconv.Itoa(q.Offset))
	}
	if q.Limit > 0 {
		v.Set("limit", strconv.Itoa(q.Limit))
	}
	return v
}

// ModelPage is one page of a model list.
type ModelPage struct {
	Models []Model `json:"data"`
	// Total is how many models the query selects, paging aside.
	Total int `json:"total_count"`
	Links struct {
		// Next is the path of the next page; empty on the last.
		Next *string `json:"next"`
	} `json:"links"`
}

// QueryModels returns the page of the model list q selects.
func (c *Client) QueryModels(ctx context.Context, q ModelQuery) (*ModelPage, error) {
	return get[ModelPage](ctx, c, "/models", q.values())
}

// ModelsForUser is QueryModels with the calling key's model allowlist
// applied.
func (c *Client) ModelsForUser(ctx context.Context, q ModelQuery) (*ModelPage, error) {
	return get[ModelPage](ctx, c, "/models/user", q.values())
}

// CountModels is how many models the filters of q select.
func (c *Client) CountModels(ctx context.Context, q ModelQuery) (int, error) {
	v := q.values()
	v.Del("sort")
	v.Del("offset")
	v.Del("limit")
	out, err := getData[struct {
		Count int `json:"count"`
	}](ctx, c, "/models/count", v)
	if err != nil {
		return 0, err
	}
	return out.Count, nil
}

// Endpoint is one provider serving a model.
type Endpoint struct {
	Name                string          `json:"name"`
	ModelID             string          `json:"model_id"`
	ProviderName        string          `json:"provider_name"`
	Tag                 string          `json:"tag"`
	ContextLength       int64           `json:"context_length"`
	Pricing             json.RawMessage `json:"pricing"`
	MaxCompletionTokens *int64          `json:"max_completion_tokens"`
	Quantization        *string         `json:"quantization"`
	SupportedParameters []string        `json:"supported_parameters"`
	UptimeLast30m       *float64        `json:"uptime_last_30m"`
}

// ModelEndpoints returns the endpoints the catalog declares for the model
// "author/slug" (none: an empty list).
func (c *Client) ModelEndpoints(ctx context.Context, id string) ([]Endpoint, error) {
	path, err := modelPath(id)
	if err != nil {
		return nil, err
	}
	out, err := getData[struct {
		Endpoints []Endpoint `json:"endpoints"`
	}](ctx, c, "/models/"+path+"/endpoints", nil)
	if err != nil {
		return nil, err
	}
	return out.Endpoints, nil
}
