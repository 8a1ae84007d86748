package keys

import (
	"encoding/json"
	"errors"
	"sort"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/aigateway/gateway/internal/invalid"
	"github.com/aigateway/gateway/internal/jsonobj"
	"github.com/aigateway/gateway/internal/money"
)

// MaxNameChars bounds a key's name.
const MaxNameChars = 100

// ErrInvalid: a request body is invalid; *InvalidError names the fields.
var ErrInvalid = errors.New("invalid key request")

// FieldProblem is what is wrong with one field of a request.
type FieldProblem struct {
	Field   string
	Problem string
}

// InvalidError lists the problems of a request, one per field, in the order
// found. It unwraps to ErrInvalid.
type InvalidError struct {
	Problems []FieldProblem
}

func (e *InvalidError) Error() string {
	parts := make([]string, len(e.Problems))
	for i, p := range e.Problems {
		parts[i] = p.Field + ": " + p.Problem
	}
	return "invalid key request: " + strings.Join(parts, "; ")
}

// Unwrap makes errors.Is(err, ErrInvalid) hold.
func (e *InvalidError) Unwrap() error { return ErrInvalid }

// FieldProblems names each offending field, in the order found.
func (e *InvalidError) FieldProblems() []invalid.Field {
	out := make([]invalid.Field, len(e.Problems))
	for i, p := range e.Problems {
		out[i] = invalid.Field{Name: p.Field, Problem: p.Problem}
	}
	return out
}

func (e *InvalidError) add(field, problem string) {
	for _, p := range e.Problems {
		if p.Field == field {
			return
		}
	}
	e.Problems = append(e.Problems, FieldProblem{field, problem})
}

func (e *InvalidError) orNil() error {
	if len(e.Problems) == 0 {
		return nil
	}
	return e
}

// Optional is one field of a partial update: Set when the body names it. For
// a nullable field a Set field with a zero Value is an explicit null.
type Optional[T any] struct {
	Set   bool
	Value T
}

// CreateRequest is the body of POST /keys, decoded.
type CreateRequest struct {
	Name string
	// Workspace is the id or slug of the key's workspace; "" is the
	// user's default workspace.
	Workspace          string
	Limit              *money.Micros
	LimitReset         Reset
	IncludeBYOKInLimit bool
	ExpiresAt          *time.Time
}

// UpdateRequest is the body of PATCH /keys/{hash}, decoded: only Set
// fields change. A null limit or limit_reset clears it.
type UpdateRequest struct {
	Name               Optional[string]
	Disabled           Optional[bool]
	Limit              Optional[*money.Micros]
	LimitReset         Optional[Reset]
	IncludeBYOKInLimit Optional[bool]
}

// Empty reports whether u changes nothing.
func (u UpdateRequest) Empty() bool {
	return !(u.Name.Set || u.Disabled.Set || u.Limit.Set || u.LimitReset.Set || u.IncludeBYOKInLimit.Set)
}

// ParseCreateRequest decodes a creation body strictly: one JSON object, no
// unknown or duplicate keys, every field of its type and within its limits,
// name required, expires_at in the future of now. Every problem is reported
// at once in *InvalidError.
func ParseCreateRequest(body []byte, now time.Time) (CreateRequest, error) {
	var (
		req  CreateRequest
		bad  = &InvalidError{}
		name bool
	)
	err := jsonobj.Walk(body, func(key string, raw json.RawMessage) {
		switch key {
		case "name":
			req.Name, name = decodeName(raw, bad), true
		case "workspace_id":
			if !jsonobj.IsNull(raw) {
				req.Workspace = decodeString(key, raw, bad)
			}
		case "limit":
			req.Limit = decodeLimit(raw, bad)
		case "limit_reset":
			req.LimitReset = decodeReset(raw, bad)
		case "include_byok_in_limit":
			req.IncludeBYOKInLimit = decodeBool(key, raw, bad)
		case "expires_at":
			req.ExpiresAt = decodeExpiry(raw, now, bad)
		default:
			bad.add(key, "unknown field")
		}
	})
	if documentProblem(err, bad) {
		return req, bad
	}
	if !name {
		bad.add("name", "required")
	}
	return req, bad.orNil()
}

// ParseUpdateRequest decodes a partial-update body as strictly as
// ParseCreateRequest decodes a creation.
func ParseUpdateRequest(body []byte) (UpdateRequest, error) {
	var (
		u   UpdateRequest
		bad = &InvalidError{}
	)
	err := jsonobj.Walk(body, func(key string, raw json.RawMessage) {
		switch key {
		case "name":
			u.Name = Optional[string]{true, decodeName(raw, bad)}
		case "disabled":
			u.Disabled = Optional[bool]{true, decodeBool(key, raw, bad)}
		case "limit":
			u.Limit = Optional[*money.Micros]{true, decodeLimit(raw, bad)}
		case "limit_reset":
			u.LimitReset = Optional[Reset]{true, decodeReset(raw, bad)}
		case "include_byok_in_limit":
			u.IncludeBYOKInLimit = Optional[bool]{true, decodeBool(key, raw, bad)}
		default:
			bad.add(key, "unknown field")
		}
	})
	documentProblem(err, bad)
	return u, bad.orNil()
}

// documentProblem records a problem of the document itself (not of a field)
// and reports whether there was one.
func documentProblem(err error, bad *InvalidError) bool {
	var dup *jsonobj.DuplicateError
	switch {
	case err == nil:
		return false
	case errors.As(err, &dup):
		bad.add(dup.Key, "duplicate key")
	default:
		bad.add("body", err.Error())
	}
	return true
}

func decodeString(field string, raw json.RawMessage, bad *InvalidError) string {
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		bad.add(field, "must be a string")
	}
	return s
}

func decodeBool(field string, raw json.RawMessage, bad *InvalidError) bool {
	var b bool
	if jsonobj.IsNull(raw) || json.Unmarshal(raw, &b) != nil {
		bad.add(field, "must be true or false")
	}
	return b
}

func decodeName(raw json.RawMessage, bad *InvalidError) string {
	if jsonobj.IsNull(raw) {
		bad.add("name", "must be a string")
		return ""
	}
	s := decodeString("name", raw, bad)
	n := utf8.RuneCountInString(s)
	switch {
	case strings.TrimSpace(s) == "":
		bad.add("name", "must not be empty")
	case n > MaxNameChars:
		bad.add("name", "must be at most 100 characters")
	case strings.ContainsFunc(s, unicode.IsControl):
		bad.add("name", "must not contain control characters")
	}
	return s
}

func decodeLimit(raw json.RawMessage, bad *InvalidError) *money.Micros {
	if jsonobj.IsNull(raw) {
		return nil
	}
	var n json.Number
	if raw[0] == '"' || json.Unmarshal(raw, &n) != nil {
		bad.add("limit", "must be a number or null")
		return nil
	}
	m, err := money.Parse(n.String())
	switch {
	case errors.Is(err, money.ErrPrecision):
		bad.add("limit", "must have at most 6 decimals")
	case err != nil:
		bad.add("limit", "must be a number in range")
	case m < 0:
		bad.add("limit", "must be 0 or more")
	default:
		return &m
	}
	return nil
}

func decodeReset(raw json.RawMessage, bad *InvalidError) Reset {
	if jsonobj.IsNull(raw) {
		return ResetNever
	}
	r := Reset(decodeString("limit_reset", raw, bad))
	if r == ResetNever || !r.Valid() {
		bad.add("limit_reset", "must be daily, weekly, monthly or null")
		return ResetNever
	}
	return r
}

func decodeExpiry(raw json.RawMessage, now time.Time, bad *InvalidError) *time.Time {
	if jsonobj.IsNull(raw) {
		return nil
	}
	s := decodeString("expires_at", raw, bad)
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		bad.add("expires_at", "must be an ISO 8601 UTC time with seconds, e.g. 2030-01-31T00:00:00Z")
		return nil
	}
	t = t.UTC().Truncate(time.Microsecond)
	if !t.After(now) {
		bad.add("expires_at", "must be in the future")
		return nil
	}
	return &t
}

// Fields lists the problems' fields, sorted, for messages.
func (e *InvalidError) Fields() []string {
	out := make([]string, len(e.Problems))
	for i, p := range e.Problems {
		out[i] = p.Field
	}
	sort.Strings(out)
	return out
}
