package workspace

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"regexp"
	"sort"
	"strings"
	"unicode"
	"unicode/utf8"
)

// CreateRequest is the body of POST /workspaces, decoded. Pointers tell an
// absent field (take the default) from a given one.
type CreateRequest struct {
	Name                            string   `json:"name"`
	Slug                            string   `json:"slug"`
	Description                     *string  `json:"description,omitempty"`
	DefaultTextModel                *string  `json:"default_text_model,omitempty"`
	DefaultImageModel               *string  `json:"default_image_model,omitempty"`
	DefaultProviderSort             *string  `json:"default_provider_sort,omitempty"`
	IOLoggingAPIKeyIDs              []string `json:"io_logging_api_key_ids"`
	IOLoggingSamplingRate           *float64 `json:"io_logging_sampling_rate,omitempty"`
	IsDataDiscountLoggingEnabled    *bool    `json:"is_data_discount_logging_enabled,omitempty"`
	IsObservabilityBroadcastEnabled *bool    `json:"is_observability_broadcast_enabled,omitempty"`
	IsObservabilityIOLoggingEnabled *bool    `json:"is_observability_io_logging_enabled,omitempty"`
}

// Limits of the spec.
const (
	MaxNameChars        = 100
	MaxSlugChars        = 50
	MaxDescriptionChars = 500
	MinSamplingRate     = 0.0001
	maxAPIKeyIDs        = 1000
	maxAPIKeyIDBytes    = 128
)

// ProviderSorts are the allowed values of default_provider_sort.
var ProviderSorts = []string{"price", "throughput", "latency", "exacto"}

// slugPattern is the spec's pattern. Go's [a-z0-9] classes are ASCII-only,
// so Unicode look-alikes (Cyrillic "а", fullwidth digits) never match.
var slugPattern = regexp.MustCompile(`^[a-z0-9]+(?:-[a-z0-9]+)*$`)

// ValidSlug reports whether s is a well-formed workspace slug.
func ValidSlug(s string) bool { return len(s) <= MaxSlugChars && slugPattern.MatchString(s) }

// InvalidError lists what is wrong with a request, by field. Its Metadata is
// safe to show the client.
type InvalidError struct {
	Fields map[string]string
}

func (e *InvalidError) Error() string {
	keys := make([]string, 0, len(e.Fields))
	for k := range e.Fields {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = k + ": " + e.Fields[k]
	}
	return "invalid workspace request: " + strings.Join(parts, "; ")
}

// Unwrap makes errors.Is(err, ErrInvalid) hold.
func (e *InvalidError) Unwrap() error { return ErrInvalid }

// Metadata names each offending field.
func (e *InvalidError) Metadata() map[string]any {
	fields := make(map[string]any, len(e.Fields))
	for k, v := range e.Fields {
		fields[k] = v
	}
	return map[string]any{"fields": fields}
}

func (e *InvalidError) add(field, problem string) {
	if e.Fields == nil {
		e.Fields = map[string]string{}
	}
	if _, dup := e.Fields[field]; !dup {
		e.Fields[field] = problem
	}
}

// ParseCreateRequest decodes a JSON body strictly: one object, no unknown,
// duplicate or case-folded keys (encoding/json would silently accept all
// three), no trailing data, and each field of the right type. Every problem
// is reported at once in *InvalidError, named by field ("body" for problems
// of the document itself).
func ParseCreateRequest(body []byte) (CreateRequest, error) {
	var req CreateRequest
	bad := &InvalidError{}

	if !utf8.Valid(body) {
		bad.add("body", "must be UTF-8 encoded JSON")
		return req, bad
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	tok, err := dec.Token()
	if err != nil || tok != json.Delim('{') {
		bad.add("body", "must be a JSON object")
		return req, bad
	}
	seen := map[string]bool{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			bad.add("body", "malformed JSON")
			return req, bad
		}
		key := tok.(string)
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			bad.add("body", "malformed JSON")
			return req, bad
		}
		if seen[key] {
			bad.add(key, "duplicate key")
			continue
		}
		seen[key] = true
		decodeField(&req, key, raw, bad)
	}
	if _, err := dec.Token(); err != nil { // the closing brace
		bad.add("body", "malformed JSON")
		return req, bad
	}
	if _, err := dec.Token(); err != io.EOF {
		bad.add("body", "unexpected data after the JSON object")
	}
	if !seen["name"] {
		bad.add("name", "required")
	}
	if !seen["slug"] {
		bad.add("slug", "required")
	}
	validate(&req, seen, bad)
	if len(bad.Fields) > 0 {
		return req, bad
	}
	return req, nil
}

// decodeField decodes one known field; names must match exactly.
func decodeField(req *CreateRequest, key string, raw json.RawMessage, bad *InvalidError) {
	isNull := bytes.Equal(bytes.TrimSpace(raw), []byte("null"))
	str := func(dst *string) {
		if err := json.Unmarshal(raw, dst); err != nil || isNull {
			bad.add(key, "must be a string")
		} else if replacedInvalid(raw, *dst) {
			bad.add(key, "must be valid UTF-8")
		}
	}
	optStr := func(dst **string) {
		if isNull {
			return // explicit null: same as absent
		}
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			bad.add(key, "must be a string")
			return
		}
		if replacedInvalid(raw, s) {
			bad.add(key, "must be valid UTF-8")
			return
		}
		*dst = &s
	}
	optBool := func(dst **bool) {
		var b bool
		if isNull || json.Unmarshal(raw, &b) != nil {
			bad.add(key, "must be a boolean")
			return
		}
		*dst = &b
	}
	switch key {
	case "name":
		str(&req.Name)
	case "slug":
		str(&req.Slug)
	case "description":
		optStr(&req.Description)
	case "default_text_model":
		optStr(&req.DefaultTextModel)
	case "default_image_model":
		optStr(&req.DefaultImageModel)
	case "default_provider_sort":
		optStr(&req.DefaultProviderSort)
	case "io_logging_api_key_ids":
		if isNull {
			return
		}
		var ids []string
		if err := json.Unmarshal(raw, &ids); err != nil {
			bad.add(key, "must be an array of strings or null")
			return
		}
		if ids == nil {
			ids = []string{}
		}
		req.IOLoggingAPIKeyIDs = ids
	case "io_logging_sampling_rate":
		// json.Number also takes a quoted number ("0.5"); a string is not a number.
		var n json.Number
		if isNull || bytes.HasPrefix(bytes.TrimSpace(raw), []byte(`"`)) || json.Unmarshal(raw, &n) != nil {
			bad.add(key, "must be a number")
			return
		}
		f, err := n.Float64()
		if err != nil {
			bad.add(key, "must be a number")
			return
		}
		req.IOLoggingSamplingRate = &f
	case "is_data_discount_logging_enabled":
		optBool(&req.IsDataDiscountLoggingEnabled)
	case "is_observability_broadcast_enabled":
		optBool(&req.IsObservabilityBroadcastEnabled)
	case "is_observability_io_logging_enabled":
		optBool(&req.IsObservabilityIOLoggingEnabled)
	default:
		bad.add(key, "unknown field")
	}
}

func validate(req *CreateRequest, seen map[string]bool, bad *InvalidError) {
	if seen["name"] && bad.Fields["name"] == "" {
		n := utf8.RuneCountInString(req.Name)
		switch {
		case !utf8.ValidString(req.Name):
			bad.add("name", "must be valid UTF-8")
		case n < 1 || n > MaxNameChars:
			bad.add("name", fmt.Sprintf("must be 1 to %d characters", MaxNameChars))
		case strings.TrimSpace(req.Name) == "":
			bad.add("name", "must not be blank")
		case strings.IndexFunc(req.Name, unicode.IsControl) >= 0:
			bad.add("name", "must not contain control characters")
		}
	}
	if seen["slug"] && bad.Fields["slug"] == "" && !ValidSlug(req.Slug) {
		bad.add("slug", fmt.Sprintf("must be 1 to %d characters of lowercase letters and digits in segments joined by single hyphens", MaxSlugChars))
	}
	if d := req.Description; d != nil && utf8.RuneCountInString(*d) > MaxDescriptionChars {
		bad.add("description", fmt.Sprintf("must be at most %d characters", MaxDescriptionChars))
	}
	if s := req.DefaultProviderSort; s != nil && !contains(ProviderSorts, *s) {
		bad.add("default_provider_sort", "must be one of "+strings.Join(ProviderSorts, ", "))
	}
	if r := req.IOLoggingSamplingRate; r != nil && (math.IsNaN(*r) || *r < MinSamplingRate || *r > 1) {
		bad.add("io_logging_sampling_rate", "must be between 0.0001 and 1")
	}
	if ids := req.IOLoggingAPIKeyIDs; len(ids) > maxAPIKeyIDs {
		bad.add("io_logging_api_key_ids", fmt.Sprintf("must have at most %d entries", maxAPIKeyIDs))
	} else {
		for _, id := range ids {
			if id == "" || len(id) > maxAPIKeyIDBytes {
				bad.add("io_logging_api_key_ids", fmt.Sprintf("entries must be 1 to %d bytes", maxAPIKeyIDBytes))
				break
			}
		}
	}
}

// replacedInvalid reports whether decoding raw replaced something with
// U+FFFD: encoding/json silently turns a lone surrogate escape ("\ud800")
// into U+FFFD, which would store a different name than the client sent.
func replacedInvalid(raw []byte, decoded string) bool {
	if !strings.ContainsRune(decoded, utf8.RuneError) {
		return false
	}
	literal := bytes.Count(raw, []byte(`\uFFFD`)) + bytes.Count(raw, []byte(`\ufffd`)) + bytes.Count(raw, []byte(string(utf8.RuneError)))
	return strings.Count(decoded, string(utf8.RuneError)) > literal
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}
