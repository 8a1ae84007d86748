package catalog

import "fmt"

// Endpoint is one provider serving a model, as
// GET /api/v1/models/{author}/{slug}/endpoints answers it. Everything but
// ModelID and ModelName (the served model's) is declared in the catalog
// file; what it leaves out is null, never invented.
type Endpoint struct {
	Name                    string            `json:"name" catalog:"required,nonempty"`
	ModelID                 string            `json:"model_id" yaml:"-"`
	ModelName               string            `json:"model_name" yaml:"-"`
	ProviderName            string            `json:"provider_name" catalog:"required,nonempty"`
	Tag                     string            `json:"tag" catalog:"required,nonempty"`
	ContextLength           int64             `json:"context_length" catalog:"required"`
	Pricing                 PublicPricing     `json:"pricing" catalog:"required"`
	MaxCompletionTokens     *int64            `json:"max_completion_tokens"`
	MaxPromptTokens         *int64            `json:"max_prompt_tokens"`
	Quantization            *string           `json:"quantization"`
	SupportedParameters     []string          `json:"supported_parameters" catalog:"required"`
	Status                  *int64            `json:"status,omitempty"`
	SupportsImplicitCaching bool              `json:"supports_implicit_caching"`
	SupportsToolChoice      ToolChoiceSupport `json:"supports_tool_choice"`
	SupportsVoiceCloning    bool              `json:"supports_voice_cloning"`
	UptimeLast5m            *float64          `json:"uptime_last_5m"`
	UptimeLast30m           *float64          `json:"uptime_last_30m"`
	UptimeLast1d            *float64          `json:"uptime_last_1d"`
	LatencyLast30m          *PercentileStats  `json:"latency_last_30m"`
	ThroughputLast30m       *PercentileStats  `json:"throughput_last_30m"`
}

// ToolChoiceSupport says which tool_choice values the endpoint honours.
type ToolChoiceSupport struct {
	Auto     bool `json:"auto"`
	None     bool `json:"none"`
	Required bool `json:"required"`
	Function bool `json:"function"`
}

// PercentileStats are a measure's percentiles over a period.
type PercentileStats struct {
	P50 float64 `json:"p50" catalog:"required"`
	P75 float64 `json:"p75" catalog:"required"`
	P90 float64 `json:"p90" catalog:"required"`
	P99 float64 `json:"p99" catalog:"required"`
}

// endpointStatuses are the status values of the public service's
// endpoints: 0 serving, below 0 degraded to down.
var endpointStatuses = map[int64]bool{0: true, -1: true, -2: true, -3: true, -5: true, -10: true}

// quantizations are the precisions an endpoint may declare.
var quantizations = map[string]bool{"int4": true, "int8": true, "fp4": true, "mxfp4": true, "nvfp4": true,
	"fp6": true, "fp8": true, "mxfp8": true, "fp16": true, "bf16": true, "fp32": true, "unknown": true}

// endpoints validates a model's endpoints, by path.
func (v *validator) endpoints(i int, m *Model) {
	names := map[string]bool{}
	for j := range m.Endpoints {
		e := &m.Endpoints[j]
		path := fmt.Sprintf("endpoints[%d]", j)
		if names[e.Tag] {
			v.add(i, path+".tag", "repeats the tag of another endpoint of this model")
		}
		names[e.Tag] = true
		if e.ContextLength <= 0 {
			v.add(i, path+".context_length", "must be positive")
		}
		for _, n := range []struct {
			name string
			v    *int64
		}{{"max_completion_tokens", e.MaxCompletionTokens}, {"max_prompt_tokens", e.MaxPromptTokens}} {
			if n.v != nil && *n.v <= 0 {
				v.add(i, path+"."+n.name, "must be positive or null")
			}
		}
		if e.Quantization != nil && !quantizations[*e.Quantization] {
			v.add(i, path+".quantization", "must be one of int4, int8, fp4, mxfp4, nvfp4, fp6, fp8, mxfp8, fp16, bf16, fp32, unknown")
		}
		if e.Status != nil && !endpointStatuses[*e.Status] {
			v.add(i, path+".status", "must be 0, -1, -2, -3, -5 or -10")
		}
		for _, u := range []struct {
			name string
			v    *float64
		}{{"uptime_last_5m", e.UptimeLast5m}, {"uptime_last_30m", e.UptimeLast30m}, {"uptime_last_1d", e.UptimeLast1d}} {
			if u.v != nil && (*u.v < 0 || *u.v > 100) {
				v.add(i, path+"."+u.name, "must be a percentage from 0 to 100")
			}
		}
		v.pricing(i, path+".pricing", &e.Pricing)
	}
}
