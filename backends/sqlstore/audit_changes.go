package sqlstore

import (
	"github.com/aigateway/gateway/internal/audit"
	"github.com/aigateway/gateway/policy/keys"
	"github.com/aigateway/gateway/workspace"
)

// field is one recorded field of a row, named as the API names it. Only
// fields a person may see are listed: never a secret, a secret's hash or
// the label masking it.
type field struct {
	name  string
	value any
}

// keyFields are the recorded fields of an API key.
func keyFields(k keys.APIKey) []field {
	var ws, reset any
	if k.WorkspaceID != "" {
		ws = k.WorkspaceID
	}
	if k.LimitReset != keys.ResetNever {
		reset = string(k.LimitReset)
	}
	return []field{
		{"name", k.Name},
		{"role", string(k.Role)},
		{"workspace_id", ws},
		{"models", k.Models},
		{"limit", k.Limit},
		{"limit_reset", reset},
		{"include_byok_in_limit", k.IncludeBYOKInLimit},
		{"expires_at", k.ExpiresAt},
		{"disabled", k.Disabled},
	}
}

// providerKeyFields are the recorded fields of a provider key; its secret
// is recorded apart, as audit.Secret("key"), and only when it changed.
func providerKeyFields(k keys.ProviderKey) []field {
	return []field{
		{"provider", k.Provider},
		{"workspace_id", k.WorkspaceID},
		{"name", k.Name},
		{"disabled", k.Disabled},
		{"allowed_api_key_hashes", k.AllowedAPIKeys},
		{"allowed_models", k.AllowedModels},
		{"is_byok_only", k.IsBYOKOnly},
		{"is_fallback", k.IsFallback},
		{"is_required", k.IsRequired},
		{"declared_zdr", k.DeclaredZDR},
		{"sort_order", k.SortOrder},
	}
}

// workspaceFields are the recorded fields of a workspace: all it has but
// its id, owner and times.
func workspaceFields(w workspace.Workspace) []field {
	return []field{
		{"name", w.Name},
		{"slug", w.Slug},
		{"description", w.Description},
		{"default_text_model", w.DefaultTextModel},
		{"default_image_model", w.DefaultImageModel},
		{"default_provider_sort", w.DefaultProviderSort},
		{"default_guardrail_id", w.DefaultGuardrailID},
		{"include_byok_in_budgets", w.IncludeBYOKInBudgets},
		{"io_logging_api_key_ids", w.IOLoggingAPIKeyIDs},
		{"io_logging_sampling_rate", w.IOLoggingSamplingRate},
		{"is_data_discount_logging_enabled", w.IsDataDiscountLoggingEnabled},
		{"is_observability_broadcast_enabled", w.IsObservabilityBroadcastEnabled},
		{"is_observability_io_logging_enabled", w.IsObservabilityIOLoggingEnabled},
	}
}

// created is the changes of a row made with fields: each field that has a
// value, from null. Absent values (null) are left out, so that every
// Change of a creation has a new value and none reads like a secret's.
func created(fields []field) []audit.Change {
	var out []audit.Change
	for _, f := range fields {
		if c, ok := audit.Diff(f.name, nil, f.value); ok {
			out = append(out, c)
		}
	}
	return out
}

// removed is the changes of a row with fields deleted: each field that
// had a value, to null, so the entry says what was deleted.
func removed(fields []field) []audit.Change {
	var out []audit.Change
	for _, f := range fields {
		if c, ok := audit.Diff(f.name, f.value, nil); ok {
			out = append(out, c)
		}
	}
	return out
}

// changed is the changes from old to new, two lists of the same fields in
// the same order: the fields whose values differ.
func changed(old, new []field) []audit.Change {
	var out []audit.Change
	for i := range old {
		if c, ok := audit.Diff(old[i].name, old[i].value, new[i].value); ok {
			out = append(out, c)
		}
	}
	return out
}
