package workspace

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"regexp"
	"slices"
	"sort"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/aigateway/gateway/internal/invalid"
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

// FieldProblems names each offending field, sorted.
func (e *InvalidError) FieldProblems() []invalid.Field {
	out := make([]invalid.Field, 0, len(e.Fields))
	for k, v := range e.Fields {
		out = append(out, invalid.Field{Name: k, Problem: v})
	}
	slices.SortFunc(out, func(a, b invalid.Field) int { return strings.Compare(a.Name, b.Name) })
	return out
}

func (e *InvalidError) add(field, problem string) {
	if e.Fields == nil {
		e.Fields = map[string]string{}
	}
	if _, dup := e.Fields[field]; !dup {
		e.Fields[field] = problem
	}
}

// Optional is one field of a partial update: Set when the body names it.
// For a nullable field T is a pointer or slice, and a Set field with a nil
// Value is an explicit null.
type Optional[T any] struct {
	Set   bool
	Value T
}

// UpdateRequest is the body of PATCH /workspaces/{id}, decoded: only the
// fields that are Set change. A null description clears it to ""; a null
// model, sort or key-id list clears it to null. Name and slug cannot be null.
type UpdateRequest struct {
	Name                            Optional[string]
	Slug                            Optional[string]
	Description                     Optional[*string]
	DefaultTextModel                Optional[*string]
	DefaultImageModel               Optional[*string]
	DefaultProviderSort             Optional[*string]
	IOLoggingAPIKeyIDs              Optional[[]string]
	IOLoggingSamplingRate           Optional[float64]
	IsDataDiscountLoggingEnabled    Optional[bool]
	IsObservabilityBroadcastEnabled Optional[bool]
	IsObservabilityIOLoggingEnabled Optional[bool]
}

// Empty reports whether u changes nothing (the body was {}).
func (u UpdateRequest) Empty() bool {
	return !(u.Name.Set || u.Slug.Set || u.Description.Set || u.DefaultTextModel.Set ||
		u.DefaultImageModel.Set || u.DefaultProviderSort.Set || u.IOLoggingAPIKeyIDs.Set ||
		u.IOLoggingSamplingRate.Set || u.IsDataDiscountLoggingEnabled.Set ||
		u.IsObservabilityBroadcastEnabled.Set || u.IsObservabilityIOLoggingEnabled.Set)
}

// ParseCreateRequest decodes a creation body strictly (see
// ParseUpdateRequest) and also requires name and slug. Every problem is
// reported at once in *InvalidError.
func ParseCreateRequest(body []byte) (CreateRequest, error) {
	u, bad, whole := parseDocument(body)
	if whole {
		if !u.Name.Set && bad.Fields["name"] == "" {
			bad.add("name", "required")
		}
		if !u.Slug.Set && bad.Fields["slug"] == "" {
			bad.add("slug", "required")
		}
	}
	req := u.create()
	if len(bad.Fields) > 0 {
		return req, bad
	}
	return req, nil
}

// ParseUpdateRequest decodes a JSON body strictly: one object, no unknown,
// duplicate or case-folded keys (encoding/json would silently accept all
// three), no trailing data, and each field of the right type and within the
// limits of creation. Every problem is reported at once in *InvalidError,
// named by field ("body" for problems of the document itself).
func ParseUpdateRequest(body []byte) (UpdateRequest, error) {
	u, bad, _ := parseDocument(body)
	if len(bad.Fields) > 0 {
		return u, bad
	}
	return u, nil
}

// parseDocument decodes and validates the fields present in body; both
// operations share it so a field is judged the same way on each. whole is
// false when the document could not be read to its end.
func parseDocument(body []byte) (u UpdateRequest, bad *InvalidError, whole bool) {
	bad = &InvalidError{}
	if !utf8.Valid(body) {
		bad.add("body", "must be UTF-8 encoded JSON")
		return u, bad, false
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	tok, err := dec.Token()
	if err != nil || tok != json.Delim('{') {
		bad.add("body", "must be a JSON object")
		return u, bad, false
	}
	seen := map[string]bool{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			bad.add("body", "malformed JSON")
			return u, bad, false
		}
		key := tok.(string)
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			bad.add("body", "malformed JSON")
			return u, bad, false
		}
		if seen[key] {
			bad.add(key, "duplicate key")
			continue
		}
		seen[key] = true
		decodeField(&u, key, raw, bad)
	}
	if _, err := dec.Token(); err != nil { // the closing brace
		bad.add("body", "malformed JSON")
		return u, bad, false
	}
	if _, err := dec.Token(); err != io.EOF {
		bad.add("body", "unexpected data after the JSON object")
	}
	validate(&u, bad)
	return u, bad, true
}

// create is the creation request u stands for: an explicit null is the same
// as an absent field there (the default applies).
func (u UpdateRequest) create() CreateRequest {
	req := CreateRequest{
		Name:                u.Name.Value,
		Slug:                u.Slug.Value,
		Description:         u.Description.Value,
		DefaultTextModel:    u.DefaultTextModel.Value,
		DefaultImageModel:   u.DefaultImageModel.Value,
		DefaultProviderSort: u.DefaultProviderSort.Value,
		IOLoggingAPIKeyIDs:  u.IOLoggingAPIKeyIDs.Value,
	}
	if o := u.IOLoggingSamplingRate; o.Set {
		req.IOLoggingSamplingRate = &o.Value
	}
	for _, f := range []struct {
		o   Optional[bool]
		dst **bool
	}{
		{u.IsDataDiscountLoggingEnabled, &req.IsDataDiscountLoggingEnabled},
		{u.IsObservabilityBroadcastEnabled, &req.IsObservabilityBroadcastEnabled},
		{u.IsObservabilityIOLoggingEnabled, &req.IsObservabilityIOLoggingEnabled},
	} {
		if f.o.Set {
			v := f.o.Value
			*f.dst = &v
		}
	}
	return req
}

// decodeField decodes one known field; names must match exactly. A field is
// Set only when its value decoded.
func decodeField(u *UpdateRequest, key string, raw json.RawMessage, bad *InvalidError) {
	isNull := bytes.Equal(bytes.TrimSpace(raw), []byte("null"))
	str := func(dst *Optional[string]) {
		var s string
		if err := json.Unmarshal(raw, &s); err != nil || isNull {
			bad.add(key, "must be a string")
		} else if replacedInvalid(raw, s) {
			bad.add(key, "must be valid UTF-8")
		} else {
			*dst = Optional[string]{Set: true, Value: s}
		}
	}
	nullableStr := func(dst *Optional[*string]) {
		if isNull {
			*dst = Optional[*string]{Set: true}
			return
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
		*dst = Optional[*string]{Set: true, Value: &s}
	}
	boolean := func(dst *Optional[bool]) {
		var b bool
		if isNull || json.Unmarshal(raw, &b) != nil {
			bad.add(key, "must be a boolean")
			return
		}
		*dst = Optional[bool]{Set: true, Value: b}
	}
	switch key {
	case "name":
		str(&u.Name)
	case "slug":
		str(&u.Slug)
	case "description":
		nullableStr(&u.Description)
	case "default_text_model":
		nullableStr(&u.DefaultTextModel)
	case "default_image_model":
		nullableStr(&u.DefaultImageModel)
	case "default_provider_sort":
		nullableStr(&u.DefaultProviderSort)
	case "io_logging_api_key_ids":
		if isNull {
			u.IOLoggingAPIKeyIDs = Optional[[]string]{Set: true}
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
		u.IOLoggingAPIKeyIDs = Optional[[]string]{Set: true, Value: ids}
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
		u.IOLoggingSamplingRate = Optional[float64]{Set: true, Value: f}
	case "is_data_discount_logging_enabled":
		boolean(&u.IsDataDiscountLoggingEnabled)
	case "is_observability_broadcast_enabled":
		boolean(&u.IsObservabilityBroadcastEnabled)
	case "is_observability_io_logging_enabled":
		boolean(&u.IsObservabilityIOLoggingEnabled)
	default:
		bad.add(key, "unknown field")
	}
}

// validate applies the limits of the spec to the fields that decoded.
func validate(u *UpdateRequest, bad *InvalidError) {
	if u.Name.Set {
		name := u.Name.Value
		n := utf8.RuneCountInString(name)
		switch {
		case !utf8.ValidString(name):
			bad.add("name", "must be valid UTF-8")
		case n < 1 || n > MaxNameChars:
			bad.add("name", fmt.Sprintf("must be 1 to %d characters", MaxNameChars))
		case strings.TrimSpace(name) == "":
			bad.add("name", "must not be blank")
		case strings.IndexFunc(name, unicode.IsControl) >= 0:
			bad.add("name", "must not contain control characters")
		}
	}
	if u.Slug.Set && !ValidSlug(u.Slug.Value) {
		bad.add("slug", fmt.Sprintf("must be 1 to %d characters of lowercase letters and digits in segments joined by single hyphens", MaxSlugChars))
	}
	if d := u.Description.Value; d != nil && utf8.RuneCountInString(*d) > MaxDescriptionChars {
		bad.add("description", fmt.Sprintf("must be at most %d characters", MaxDescriptionChars))
	}
	if s := u.DefaultProviderSort.Value; s != nil && !contains(ProviderSorts, *s) {
		bad.add("default_provider_sort", "must be one of "+strings.Join(ProviderSorts, ", "))
	}
	if r := u.IOLoggingSamplingRate; r.Set && (math.IsNaN(r.Value) || r.Value < MinSamplingRate || r.Value > 1) {
		bad.add("io_logging_sampling_rate", "must be between 0.0001 and 1")
	}
	if ids := u.IOLoggingAPIKeyIDs.Value; len(ids) > maxAPIKeyIDs {
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
