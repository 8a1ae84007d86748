package keys

import (
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/aigateway/gateway/internal/invalid"
	"github.com/aigateway/gateway/internal/money"
)

var checkNow = time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)

func ptr[T any](v T) *T { return &v }

// fieldsOf returns the fields p names, sorted, with their problems.
func fieldsOf(p *invalid.Problems) map[string]string {
	out := map[string]string{}
	for _, f := range p.FieldProblems() {
		out[f.Name] = f.Problem
	}
	return out
}

func sortedNames(m map[string]string) []string {
	var names []string
	for n := range m {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

func TestCreateRequestCheck(t *testing.T) {
	valid := CreateRequest{Name: ptr("ci"), Workspace: "prod", Limit: ptr(money.Micros(12_500_000)), LimitReset: ResetWeekly,
		IncludeBYOKInLimit: true, ExpiresAt: ptr(time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC))}
	var p invalid.Problems
	valid.Check(checkNow, &p)
	if err := p.Err(); err != nil {
		t.Fatalf("a valid request: %v", err)
	}
	cases := map[string]struct {
		req  CreateRequest
		want map[string]string
	}{
		"no name":         {CreateRequest{}, map[string]string{"name": "required"}},
		"empty name":      {CreateRequest{Name: ptr("")}, map[string]string{"name": "must not be empty"}},
		"blank name":      {CreateRequest{Name: ptr("   ")}, map[string]string{"name": "must not be empty"}},
		"101 characters":  {CreateRequest{Name: ptr(strings.Repeat("é", 101))}, map[string]string{"name": "must be at most 100 characters"}},
		"control":         {CreateRequest{Name: ptr("a\u0007b")}, map[string]string{"name": "must not contain control characters"}},
		"bidi override":   {CreateRequest{Name: ptr("ci\u202etxt.exe")}, map[string]string{"name": "must not contain bidirectional control characters"}},
		"zero-width":      {CreateRequest{Name: ptr("\u200b")}, map[string]string{"name": "must not contain invisible formatting characters"}},
		"negative limit":  {CreateRequest{Name: ptr("a"), Limit: ptr(money.Micros(-1))}, map[string]string{"limit": "must be 0 or more"}},
		"unknown window":  {CreateRequest{Name: ptr("a"), LimitReset: Reset("yearly")}, map[string]string{"limit_reset": ResetRule}},
		"expired":         {CreateRequest{Name: ptr("a"), ExpiresAt: ptr(checkNow.Add(-time.Hour))}, map[string]string{"expires_at": "must be in the future"}},
		"expires now":     {CreateRequest{Name: ptr("a"), ExpiresAt: ptr(checkNow)}, map[string]string{"expires_at": "must be in the future"}},
		"within the µs":   {CreateRequest{Name: ptr("a"), ExpiresAt: ptr(checkNow.Add(100 * time.Nanosecond))}, map[string]string{"expires_at": "must be in the future"}},
		"several at once": {CreateRequest{Limit: ptr(money.Micros(-5)), ExpiresAt: ptr(checkNow)}, map[string]string{"name": "required", "limit": "", "expires_at": ""}},
	}
	for name, c := range cases {
		var p invalid.Problems
		c.req.Check(checkNow, &p)
		got := fieldsOf(&p)
		if !reflect.DeepEqual(sortedNames(got), sortedNames(c.want)) {
			t.Errorf("%s: %v, want %v", name, got, c.want)
			continue
		}
		for f, w := range c.want {
			if w != "" && got[f] != w {
				t.Errorf("%s: %s: %q, want %q", name, f, got[f], w)
			}
		}
	}
	// CheckFields requires nothing: the fields of a document cut short.
	var q invalid.Problems
	CreateRequest{Limit: ptr(money.Micros(-1))}.CheckFields(checkNow, &q)
	if got := fieldsOf(&q); !reflect.DeepEqual(sortedNames(got), []string{"limit"}) {
		t.Errorf("CheckFields named %v, want limit alone", got)
	}
	// A problem found before (decoding) is the one the field keeps.
	var r invalid.Problems
	r.Add("name", "must be a string")
	CreateRequest{}.Check(checkNow, &r)
	if got := fieldsOf(&r); got["name"] != "must be a string" || len(got) != 1 {
		t.Errorf("with a problem found before: %v", got)
	}
}

func TestUpdateRequestCheck(t *testing.T) {
	var p invalid.Problems
	u := UpdateRequest{Disabled: Optional[bool]{true, true}, Limit: Optional[*money.Micros]{Set: true}, LimitReset: Optional[Reset]{Set: true}}
	u.Check(&p)
	if err := p.Err(); err != nil || u.Empty() {
		t.Fatalf("clearing the limit: %v (empty %v)", err, u.Empty())
	}
	if !(UpdateRequest{}).Empty() {
		t.Error("an update of nothing is not Empty")
	}
	p = invalid.Problems{}
	UpdateRequest{Name: Optional[string]{true, " "}, Limit: Optional[*money.Micros]{true, ptr(money.Micros(-1))},
		LimitReset: Optional[Reset]{true, "hourly"}}.Check(&p)
	if got := sortedNames(fieldsOf(&p)); !reflect.DeepEqual(got, []string{"limit", "limit_reset", "name"}) {
		t.Errorf("named %v", got)
	}
}

func TestParseReset(t *testing.T) {
	for s, want := range map[string]bool{"daily": true, "weekly": true, "monthly": true, "": false, "yearly": false, "Daily": false} {
		if r, ok := ParseReset(s); ok != want || ok && string(r) != s {
			t.Errorf("ParseReset(%q) = %q, %v", s, r, ok)
		}
	}
}

// The fingerprints of idempotent creations are compared with records
// written by earlier versions: the encoding of a request must not change
// (these are the hashes an earlier version made of the same requests).
func TestRequestHashIsStable(t *testing.T) {
	req := CreateRequest{Name: ptr("ci"), Workspace: "prod", Limit: ptr(money.Micros(12_500_000)), LimitReset: ResetWeekly,
		IncludeBYOKInLimit: true, ExpiresAt: ptr(time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC))}
	if got := requestHash(req, "ws-1"); got != "5a9ff5b8c58264d32ad7a82d674ddc2498cba0764975e42c0c8229d18d55cc63" {
		t.Errorf("hash %s has changed", got)
	}
	if got := requestHash(CreateRequest{Name: ptr("ci")}, "ws-1"); got != "c3cfbe6ee0c3d3cbe543e705cb9f5783eaadd1bb57fce0c015daaa5c035022f3" {
		t.Errorf("hash %s has changed", got)
	}
}
