package keys

import (
	"strings"
	"time"
	"unicode/utf8"

	"github.com/aigateway/gateway/internal/displaytext"
	"github.com/aigateway/gateway/internal/invalid"
	"github.com/aigateway/gateway/internal/money"
)

// MaxNameChars bounds a key's name.
const MaxNameChars = 100

// Optional is one field of a partial update: Set when the request gives
// it. For a nullable field a Set field with a zero Value is an explicit
// null.
type Optional[T any] struct {
	Set   bool
	Value T
}

// CreateRequest is the creation of a standard key, typed: the edge decodes
// it from the body of POST /keys.
//
// Its JSON encoding is part of the fingerprint of an idempotent creation,
// compared with records written before an upgrade: it must not change. (A
// given Name encodes as the string it points to, as when it was a plain
// string.)
type CreateRequest struct {
	// Name is required (nil: not given).
	Name *string
	// Workspace is the id or slug of the key's workspace; "" is the
	// user's default workspace.
	Workspace  string
	Limit      *money.Micros
	LimitReset Reset
	// IncludeBYOKInLimit counts usage served with the workspace's own
	// provider keys against the limit.
	IncludeBYOKInLimit bool
	ExpiresAt          *time.Time
}

// UpdateRequest is a partial update of a standard key, typed: the edge
// decodes it from the body of PATCH /keys/{hash}. Only Set fields change;
// a Set Limit of nil and a Set LimitReset of ResetNever clear them.
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

// ParseReset reads a limit's window as the API names it: daily, weekly or
// monthly. (No window, ResetNever, is the absence of one, never a name.)
func ParseReset(s string) (Reset, bool) {
	r := Reset(s)
	return r, r != ResetNever && r.Valid()
}

// Check adds to p what is wrong with r as a creation at now: each given
// field's own rules (CheckFields), and name is required. Manager.Create
// checks its request with it; the edge calls it too when decoding the body
// already found problems of its own, so that the client hears of every
// problem at once. A field that already has a problem in p keeps it.
func (r CreateRequest) Check(now time.Time, p *invalid.Problems) {
	r.CheckFields(now, p)
	if r.Name == nil {
		p.Add("name", "required")
	}
}

// CheckFields adds to p what is wrong with each field r gives, requiring
// none: a name of 1 to MaxNameChars characters that follows the rule of
// names shown to people (internal/displaytext: no control, bidirectional
// or invisible formatting characters), a limit of 0 or more, a window that exists, an expiry after now. It
// judges the fields of a document that could not be read to its end.
func (r CreateRequest) CheckFields(now time.Time, p *invalid.Problems) {
	if r.Name != nil {
		checkName(*r.Name, p)
	}
	checkLimit(r.Limit, p)
	checkReset(r.LimitReset, p)
	if r.ExpiresAt != nil && !expiry(*r.ExpiresAt).After(now) {
		p.Add("expires_at", "must be in the future")
	}
}

// Check adds to p what is wrong with each field u sets, as
// CreateRequest.CheckFields judges them. An update requires nothing.
func (u UpdateRequest) Check(p *invalid.Problems) {
	if u.Name.Set {
		checkName(u.Name.Value, p)
	}
	checkLimit(u.Limit.Value, p)
	checkReset(u.LimitReset.Value, p)
}

// expiry is an expiry time as it is kept: UTC, to the microsecond the
// stores hold.
func expiry(t time.Time) time.Time { return t.UTC().Truncate(time.Microsecond) }

// checkName applies the rule of a key's name, whoever names the key (the
// /keys routes, the console through them, the operator's CLI): it is shown
// in listings, in the console and in terminals, to people who must be able
// to tell keys apart by it.
func checkName(s string, p *invalid.Problems) {
	n := utf8.RuneCountInString(s)
	switch {
	case strings.TrimSpace(s) == "":
		p.Add("name", "must not be empty")
	case n > MaxNameChars:
		p.Add("name", "must be at most 100 characters")
	default:
		checkDisplayName(s, p)
	}
}

// checkDisplayName adds the problem of a name that breaks the rule of
// names shown to people, if it does.
func checkDisplayName(s string, p *invalid.Problems) {
	if rule, _ := displaytext.Check(s); rule != displaytext.OK {
		p.Add("name", rule.Problem())
	}
}

func checkLimit(m *money.Micros, p *invalid.Problems) {
	if m != nil && *m < 0 {
		p.Add("limit", "must be 0 or more")
	}
}

func checkReset(r Reset, p *invalid.Problems) {
	if !r.Valid() {
		p.Add("limit_reset", ResetRule)
	}
}

// ResetRule is what a limit's window must be.
const ResetRule = "must be daily, weekly, monthly or null"
