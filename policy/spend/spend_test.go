package spend

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/aigateway/gateway/internal/money"
	"github.com/aigateway/gateway/policy/keys"
)

var now = at("2026-11-25T12:00:00Z")

func TestParseBatch(t *testing.T) {
	rs, err := ParseBatch([]byte(`{"reports":[
		{"id":"r1","key":"00000000000000aa","cost":0.000001,"byok":true,"at":"2026-11-25T11:00:00Z"},
		{"id":"r2","key":"00000000000000bb","cost":12}]}`), now)
	if err != nil {
		t.Fatal(err)
	}
	if len(rs) != 2 || rs[0].Cost != 1 || !rs[0].BYOK || !rs[0].At.Equal(at("2026-11-25T11:00:00Z")) ||
		rs[1].Cost != 12_000_000 || !rs[1].At.Equal(now) {
		t.Fatalf("parsed %+v", rs)
	}
	many := make([]string, MaxBatch+1)
	for i := range many {
		many[i] = fmt.Sprintf(`{"id":"r%d","key":"00000000000000aa","cost":1}`, i)
	}
	cases := map[string]string{
		`{}`:                   "reports",
		`{"reports":[]}`:       "reports",
		`{"reports":{}}`:       "reports",
		`{"reports":[],"x":1}`: "x",
		`{"reports":[1]}`:      "reports[0]",
		`{"reports":[{"key":"00000000000000aa","cost":1}]}`:                                                       "reports[0].id",
		`{"reports":[{"id":"a","cost":1}]}`:                                                                       "reports[0].key",
		`{"reports":[{"id":"a","key":"00000000000000aa"}]}`:                                                       "reports[0].cost",
		`{"reports":[{"id":"a","key":"x","cost":1}]}`:                                                             "reports[0].key",
		`{"reports":[{"id":"a","key":"00000000000000aa","cost":-1}]}`:                                             "reports[0].cost",
		`{"reports":[{"id":"a","key":"00000000000000aa","cost":"1"}]}`:                                            "reports[0].cost",
		`{"reports":[{"id":"a","key":"00000000000000aa","cost":1000000.000001}]}`:                                 "reports[0].cost",
		`{"reports":[{"id":"a","key":"00000000000000aa","cost":9223372036854.775807}]}`:                           "reports[0].cost",
		`{"reports":[{"id":"a","key":"00000000000000aa","cost":0.0000001}]}`:                                      "reports[0].cost",
		`{"reports":[{"id":"a","key":"00000000000000aa","cost":1,"byok":null}]}`:                                  "reports[0].byok",
		`{"reports":[{"id":"a","key":"00000000000000aa","cost":1,"at":"2026-12-01T00:00:00Z"}]}`:                  "reports[0].at",
		`{"reports":[{"id":"a","key":"00000000000000aa","cost":1,"at":"2026-10-01T00:00:00Z"}]}`:                  "reports[0].at",
		`{"reports":[{"id":"a","key":"00000000000000aa","cost":1,"at":"yesterday"}]}`:                             "reports[0].at",
		`{"reports":[{"id":"a","key":"00000000000000aa","cost":1,"id":"b"}]}`:                                     "reports[0].id",
		`{"reports":[{"id":"a","key":"00000000000000aa","cost":1},{"id":"a","key":"00000000000000aa","cost":2}]}`: "reports[1].id",
		`{"reports":[{"id":"a b","key":"00000000000000aa","cost":1}]}`:                                            "reports[0].id",
		`{"reports":[` + strings.Join(many, ",") + `]}`:                                                           "reports",
		// The first problem met in order is named: a repeated id before a
		// bad report, a bad report before a repeated id.
		`{"reports":[{"id":"a","key":"00000000000000aa","cost":1},{"id":"a","key":"00000000000000aa","cost":1},{"id":"b","cost":1}]}`: "reports[1].id",
		`{"reports":[{"id":"a","key":"00000000000000aa","cost":1},{"id":"b","cost":1},{"id":"a","key":"00000000000000aa","cost":1}]}`: "reports[1].key",
	}
	for body, field := range cases {
		_, err := ParseBatch([]byte(body), now)
		var bad *InvalidError
		if !errors.As(err, &bad) || bad.Field != field || !errors.Is(err, ErrInvalid) {
			t.Errorf("%.80s: %v, want a problem of %q", body, err, field)
		}
	}
}

func TestFirstRepeat(t *testing.T) {
	reports := func(ids ...string) []Report {
		rs := make([]Report, len(ids))
		for i, id := range ids {
			rs[i].ID = id
		}
		return rs
	}
	for _, c := range []struct {
		ids  []string
		i, j int
		ok   bool
	}{
		{nil, 0, 0, false},
		{[]string{"a"}, 0, 0, false},
		{[]string{"a", "b", "c"}, 0, 0, false},
		{[]string{"a", "a"}, 1, 0, true},
		{[]string{"b", "a", "c", "a", "b"}, 3, 1, true},
		{[]string{"a", "b", "b", "a"}, 2, 1, true},
		{[]string{"z", "a", "z", "a", "z"}, 2, 0, true},
		{[]string{"x", "x", "x"}, 1, 0, true},
	} {
		i, j, ok := firstRepeat(reports(c.ids...))
		if i != c.i || j != c.j || ok != c.ok {
			t.Errorf("firstRepeat(%q) = %d, %d, %v; want %d, %d, %v", c.ids, i, j, ok, c.i, c.j, c.ok)
		}
	}
}

func TestCheckOrder(t *testing.T) {
	set := map[Interval]money.Micros{Lifetime: 1000, Weekly: 100}
	ok := []struct {
		iv    Interval
		limit money.Micros
	}{{Monthly, 500}, {Daily, 99}, {Lifetime, 101}, {Weekly, 999}}
	for _, c := range ok {
		if err := CheckOrder(set, c.iv, c.limit); err != nil {
			t.Errorf("%s %d: %v", c.iv, c.limit, err)
		}
	}
	bad := []struct {
		iv       Interval
		limit    money.Micros
		conflict Interval
	}{{Monthly, 1000, Lifetime}, {Monthly, 100, Weekly}, {Daily, 100, Weekly}, {Lifetime, 100, Weekly}, {Weekly, 1000, Lifetime}}
	for _, c := range bad {
		err := CheckOrder(set, c.iv, c.limit)
		var oe *OrderError
		if !errors.As(err, &oe) || oe.ConflictsWith != c.conflict || !errors.Is(err, ErrOrder) {
			t.Errorf("%s %d: %v, want a conflict with %s", c.iv, c.limit, err, c.conflict)
		}
	}
}

// The 402 decision table: which keys are refused and why.
func TestDecide(t *testing.T) {
	w := WindowsAt(now)
	limit := money.Micros(5_000_000)
	snap := NewSnapshot(w, []KeyStanding{
		{KeyID: "spent", Limit: limit, Reset: keys.ResetDaily, Usage: Usage{Daily: 5_000_000, Total: 9_000_000}},
		{KeyID: "yesterday", Limit: limit, Reset: keys.ResetDaily, Usage: Usage{Daily: 1, Total: 9_000_000}},
		{KeyID: "byok-excluded", Limit: limit, Reset: keys.ResetMonthly, Usage: Usage{Monthly: 6_000_000, BYOKMonthly: 2_000_000}},
		{KeyID: "byok-included", Limit: limit, Reset: keys.ResetMonthly, IncludeBYOK: true, Usage: Usage{Monthly: 6_000_000, BYOKMonthly: 2_000_000}},
		{KeyID: "lifetime", Limit: limit, Usage: Usage{Total: 5_000_000}},
		{KeyID: "zero", Limit: 0},
	}, []BudgetStanding{
		{Budget: Budget{WorkspaceID: "ws-over", Interval: Weekly, Limit: 10}, Usage: Usage{Weekly: 10}},
		{Budget: Budget{WorkspaceID: "ws-over", Interval: Lifetime, Limit: 20}, Usage: Usage{Total: 25}},
		{Budget: Budget{WorkspaceID: "ws-under", Interval: Daily, Limit: 10}, Usage: Usage{Daily: 9, Weekly: 100}},
		{Budget: Budget{WorkspaceID: "ws-byok", Interval: Daily, Limit: 10}, Usage: Usage{Daily: 12, BYOKDaily: 5}},
	})
	cases := []struct {
		key  keys.APIKey
		want error
	}{
		{keys.APIKey{ID: "spent", Role: keys.RoleStandard}, ErrKeyLimit},
		{keys.APIKey{ID: "spent", Role: keys.RoleService}, nil},
		{keys.APIKey{ID: "yesterday", Role: keys.RoleStandard}, nil},
		{keys.APIKey{ID: "byok-excluded", Role: keys.RoleStandard}, nil},
		{keys.APIKey{ID: "byok-included", Role: keys.RoleStandard}, ErrKeyLimit},
		{keys.APIKey{ID: "lifetime", Role: keys.RoleManagement}, ErrKeyLimit},
		{keys.APIKey{ID: "zero", Role: keys.RoleStandard}, ErrKeyLimit},
		{keys.APIKey{ID: "free", Role: keys.RoleStandard, WorkspaceID: "ws-over"}, ErrBudget},
		{keys.APIKey{ID: "free", Role: keys.RoleService, WorkspaceID: "ws-over"}, nil},
		{keys.APIKey{ID: "free", Role: keys.RoleStandard, WorkspaceID: "ws-under"}, nil},
		{keys.APIKey{ID: "free", Role: keys.RoleStandard, WorkspaceID: "ws-byok"}, nil},
		{keys.APIKey{ID: "free", Role: keys.RoleStandard}, nil},
	}
	for _, c := range cases {
		if err := snap.Decide(&c.key); !errors.Is(err, c.want) || (c.want == nil) != (err == nil) {
			t.Errorf("%s (%s, ws %q): %v, want %v", c.key.ID, c.key.Role, c.key.WorkspaceID, err, c.want)
		}
	}
	// The widest budget reached is the one named, with no reset for lifetime.
	err := snap.Decide(&keys.APIKey{ID: "free", Role: keys.RoleStandard, WorkspaceID: "ws-over"})
	var be *BudgetError
	if !errors.As(err, &be) || be.WorkspaceID != "ws-over" || be.Interval != Lifetime || be.Limit != 20 || be.ResetsAt != nil {
		t.Errorf("ws-over: %+v", be)
	}
	snap2 := NewSnapshot(w, nil, []BudgetStanding{{Budget: Budget{WorkspaceID: "w", Interval: Weekly, Limit: 1}, Usage: Usage{Weekly: 1}}})
	weekEnd := at("2026-11-30T00:00:00Z")
	if err := snap2.Decide(&keys.APIKey{ID: "k", WorkspaceID: "w"}); !errors.As(err, &be) || be.Interval != Weekly || be.ResetsAt == nil || !be.ResetsAt.Equal(weekEnd) {
		t.Errorf("weekly budget: %+v, want it to reset at %v", be, weekEnd)
	}
	var ke *KeyLimitError
	if err := snap.Decide(&keys.APIKey{ID: "spent"}); !errors.As(err, &ke) || ke.Reset != keys.ResetDaily || ke.Limit != limit {
		t.Errorf("spent: %+v", ke)
	}
	if err := snap.Decide(&keys.APIKey{ID: "lifetime"}); !errors.As(err, &ke) || ke.Reset != keys.ResetNever || ke.Limit != limit {
		t.Errorf("lifetime: %+v", ke)
	}
	var nilSnap *Snapshot
	if err := nilSnap.Decide(&keys.APIKey{ID: "spent"}); err != nil {
		t.Errorf("before the first refresh: %v, want served", err)
	}
}

func TestRemaining(t *testing.T) {
	limit := money.Micros(5_000_000)
	k := &keys.APIKey{Limit: &limit, LimitReset: keys.ResetWeekly}
	if r := Remaining(k, Usage{Weekly: 2_000_000, Total: 9_000_000}); r == nil || *r != 3_000_000 {
		t.Errorf("remaining = %v", r)
	}
	if r := Remaining(k, Usage{Weekly: 7_000_000}); r == nil || *r != 0 {
		t.Errorf("overspent remaining = %v, want 0", r)
	}
	if r := Remaining(&keys.APIKey{}, Usage{}); r != nil {
		t.Errorf("no limit: %v", r)
	}
}
