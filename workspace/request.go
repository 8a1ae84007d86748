package workspace

import (
	"fmt"
	"math"
	"regexp"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/aigateway/gateway/internal/displaytext"
	"github.com/aigateway/gateway/internal/invalid"
)

// CreateRequest is a creation, typed: the edge decodes it from the body of
// POST /workspaces. A nil pointer is a field not given (an explicit null
// of a nullable field is the same here): its default applies. Name and Slug
// are required.
//
// Its JSON encoding is the fingerprint of an idempotent creation, compared
// with records written before an upgrade: it must not change. (A given
// Name or Slug encodes as the string it points to, as when they were plain
// strings.)
type CreateRequest struct {
	Name                            *string  `json:"name"`
	Slug                            *string  `json:"slug"`
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

// Optional is one field of a partial update: Set when the request gives
// it. For a nullable field T is a pointer or slice, and a Set field with a
// nil Value is an explicit null.
type Optional[T any] struct {
	Set   bool
	Value T
}

// UpdateRequest is a partial update, typed: the edge decodes it from the
// body of PATCH /workspaces/{id}. Only the fields that are Set change. A
// null description clears it to ""; a null model, sort or key-id list
// clears it to null. Name and slug cannot be null (the edge refuses it).
//
// Its JSON encoding is part of the fingerprint of an idempotent update,
// compared with records written before an upgrade: it must not change.
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

// Empty reports whether u changes nothing (an update of no field).
func (u UpdateRequest) Empty() bool {
	return !(u.Name.Set || u.Slug.Set || u.Description.Set || u.DefaultTextModel.Set ||
		u.DefaultImageModel.Set || u.DefaultProviderSort.Set || u.IOLoggingAPIKeyIDs.Set ||
		u.IOLoggingSamplingRate.Set || u.IsDataDiscountLoggingEnabled.Set ||
		u.IsObservabilityBroadcastEnabled.Set || u.IsObservabilityIOLoggingEnabled.Set)
}

// CheckCreate adds to p what is wrong with req as a creation: each given
// field against the limits of the spec, name and slug required, default
// models the catalog does not serve. Create checks its request with it;
// the edge calls it too when decoding the body already found problems of
// its own, so that the client hears of every problem at once. A field that
// already has a problem in p keeps it.
func (s *Service) CheckCreate(req CreateRequest, p *invalid.Problems) {
	checkFields(req.fields(), p)
	if req.Name == nil {
		p.Add("name", "required")
	}
	if req.Slug == nil {
		p.Add("slug", "required")
	}
	s.checkModels(req.DefaultTextModel, req.DefaultImageModel, p)
}

// CheckUpdate adds to p what is wrong with u as an update: each Set field
// against the limits of creation, default models the catalog does not
// serve. It requires nothing, so it also judges the fields of a document
// that could not be read to its end. As CheckCreate, it keeps the problems
// already in p.
func (s *Service) CheckUpdate(u UpdateRequest, p *invalid.Problems) {
	checkFields(u, p)
	s.checkModels(u.DefaultTextModel.Value, u.DefaultImageModel.Value, p)
}

// fields is req as the fields it gives.
func (req CreateRequest) fields() UpdateRequest {
	u := UpdateRequest{
		Description:         Optional[*string]{req.Description != nil, req.Description},
		DefaultTextModel:    Optional[*string]{req.DefaultTextModel != nil, req.DefaultTextModel},
		DefaultImageModel:   Optional[*string]{req.DefaultImageModel != nil, req.DefaultImageModel},
		DefaultProviderSort: Optional[*string]{req.DefaultProviderSort != nil, req.DefaultProviderSort},
		IOLoggingAPIKeyIDs:  Optional[[]string]{req.IOLoggingAPIKeyIDs != nil, req.IOLoggingAPIKeyIDs},
	}
	if req.Name != nil {
		u.Name = Optional[string]{true, *req.Name}
	}
	if req.Slug != nil {
		u.Slug = Optional[string]{true, *req.Slug}
	}
	if req.IOLoggingSamplingRate != nil {
		u.IOLoggingSamplingRate = Optional[float64]{true, *req.IOLoggingSamplingRate}
	}
	return u
}

// checkFields applies the limits of the spec to the fields u sets.
func checkFields(u UpdateRequest, p *invalid.Problems) {
	if u.Name.Set {
		name := u.Name.Value
		n := utf8.RuneCountInString(name)
		switch {
		case !utf8.ValidString(name):
			p.Add("name", "must be valid UTF-8")
		case n < 1 || n > MaxNameChars:
			p.Add("name", fmt.Sprintf("must be 1 to %d characters", MaxNameChars))
		case strings.TrimSpace(name) == "":
			p.Add("name", "must not be blank")
		default:
			// The rule of every name shown to people: a workspace's name
			// is read in the console and in listings beside others.
			if rule, _ := displaytext.Check(name); rule != displaytext.OK {
				p.Add("name", rule.Problem())
			}
		}
	}
	if u.Slug.Set && !ValidSlug(u.Slug.Value) {
		p.Add("slug", fmt.Sprintf("must be 1 to %d characters of lowercase letters and digits in segments joined by single hyphens", MaxSlugChars))
	}
	if d := u.Description.Value; d != nil && utf8.RuneCountInString(*d) > MaxDescriptionChars {
		p.Add("description", fmt.Sprintf("must be at most %d characters", MaxDescriptionChars))
	}
	if s := u.DefaultProviderSort.Value; s != nil && !slices.Contains(ProviderSorts, *s) {
		p.Add("default_provider_sort", "must be one of "+strings.Join(ProviderSorts, ", "))
	}
	if r := u.IOLoggingSamplingRate; r.Set && (math.IsNaN(r.Value) || r.Value < MinSamplingRate || r.Value > 1) {
		p.Add("io_logging_sampling_rate", "must be between 0.0001 and 1")
	}
	if ids := u.IOLoggingAPIKeyIDs.Value; len(ids) > maxAPIKeyIDs {
		p.Add("io_logging_api_key_ids", fmt.Sprintf("must have at most %d entries", maxAPIKeyIDs))
	} else {
		for _, id := range ids {
			if id == "" || len(id) > maxAPIKeyIDBytes {
				p.Add("io_logging_api_key_ids", fmt.Sprintf("entries must be 1 to %d bytes", maxAPIKeyIDBytes))
				break
			}
		}
	}
}

// checkModels adds the default models the catalog does not serve. It is
// the one place the catalog is asked.
func (s *Service) checkModels(text, image *string, p *invalid.Problems) {
	if s.models == nil {
		return
	}
	for _, m := range []struct {
		field string
		id    *string
	}{{"default_text_model", text}, {"default_image_model", image}} {
		if m.id != nil && !s.models.ModelExists(*m.id) {
			p.Add(m.field, "is not a model the catalog serves")
		}
	}
}
