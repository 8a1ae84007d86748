package catalog

// Closed value sets of the API contract. The contract names some values only
// as "names of model families"; those are filled in from the public schema of
// the catalog API the contract describes (and every value the 2026-08-18
// snapshot uses is among them). A value outside a set is a load problem:
// adding a new family is a one-line change here, reviewed like any schema
// change, rather than a typo slipping silently into responses.

func set(values ...string) map[string]bool {
	m := make(map[string]bool, len(values))
	for _, v := range values {
		m[v] = true
	}
	return m
}

var (
	inputModalities  = set("text", "image", "file", "audio", "video")
	outputModalities = set("text", "image", "embeddings", "audio", "video", "rerank", "speech", "transcription")

	// parameters lists the contract's Parameter values (it says 25 and lists
	// 26; all 26 are accepted).
	parameters = set("temperature", "top_p", "top_k", "min_p", "top_a", "frequency_penalty",
		"presence_penalty", "repetition_penalty", "max_tokens", "max_completion_tokens", "logit_bias",
		"logprobs", "top_logprobs", "prediction", "seed", "response_format", "structured_outputs", "stop",
		"tools", "tool_choice", "parallel_tool_calls", "include_reasoning", "reasoning",
		"reasoning_effort", "web_search_options", "verbosity")

	// tokenizers is ModelGroup: Router, Media, Other and 17 family names.
	tokenizers = set("Router", "Media", "Other",
		"GPT", "Claude", "Gemini", "Gemma", "Grok", "Cohere", "Nova", "Qwen", "Qwen3", "Yi",
		"DeepSeek", "Mistral", "Llama2", "Llama3", "Llama4", "PaLM", "RWKV")

	// instructTypes is InstructType: the nine format names of the contract
	// and 13 family names (null is handled by the field's type).
	instructTypes = set("none", "airoboros", "alpaca", "alpaca-modif", "chatml", "neural", "openchat",
		"vicuna", "zephyr",
		"claude", "code-llama", "gemma", "llama2", "llama3", "mistral", "nemotron", "phi3", "rwkv",
		"deepseek-r1", "deepseek-v3.1", "qwq", "qwen3")
)

// effortRank orders ReasoningEffort values, highest first (null is handled by
// the field's type).
var effortRank = map[string]int{"max": 0, "xhigh": 1, "high": 2, "medium": 3, "low": 4, "minimal": 5, "none": 6}
