package spend

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/aigateway/gateway/internal/invalid"
	"github.com/aigateway/gateway/internal/money"
	"github.com/aigateway/gateway/policy/keys"
)

var now = at("2026-11-25T12:00:00Z")

// step is one thing the edge hands a form: a field's typed value, or a
// problem it found (Refuse), or a problem of the document (Malformed).
type step func(f *ReportForm)

func setID(s string) step            { return func(f *ReportForm) { f.ID(s) } }
func setKey(s string) step           { return func(f *ReportForm) { f.Key(s) } }
func setCost(c money.Micros) step    { return func(f *ReportForm) { f.Cost(c) } }
func setBYOK(b bool) step            { return func(f *ReportForm) { f.BYOK(b) } }
func setAt(t time.Time) step         { return func(f *ReportForm) { f.At(t) } }
func refuse(field, p string) step    { return func(f *ReportForm) { f.Refuse(field, p) } }
func malformed(field, p string) step { return func(f *ReportForm) { f.Malformed(field, p) } }

// valid is a report of a batch without problems.
func valid(name string) []step { return []step{setID(name), setKey("00000000000000aa"), setCost(1)} }

// fill reads the reports into a batch as the edge would.
func fill(reports ...[]step) func(*BatchForm) {
	return func(b *BatchForm) {
		for _, r := range reports {
			f := b.Next()
			if f == nil {
				return
			}
			for _, s := range r {
				s(f)
			}
		}
	}
}

// readBatch runs read on a fresh form, as ReportBatch does.
func readBatch(read func(*BatchForm)) ([]Report, error) {
	b := &BatchForm{now: now}
	read(b)
	return b.batch()
}

// problemOf returns the one field and problem err names.
func problemOf(t *testing.T, err error) (string, string) {
	t.Helper()
	fields := invalid.Fields(err)
	if len(fields) != 1 {
		t.Fatalf("%v: want one problem", err)
	}
	return fields[0].Name, fields[0].Problem
}

func TestBatchForm(t *testing.T) {
	rs, err := readBatch(fill(
		[]step{setID("r1"), setKey("00000000000000aa"), setCost(1), setBYOK(true), setAt(at("2026-11-25T11:00:00+01:00"))},
		[]step{setCost(12_000_000), setKey("00000000000000bb"), setID("r2")}))
	if err != nil {
		t.Fatal(err)
	}
	if len(rs) != 2 || rs[0].Cost != 1 || !rs[0].BYOK || !rs[0].At.Equal(at("2026-11-25T10:00:00Z")) || rs[0].At.Location() != time.UTC ||
		rs[1].Cost != 12_000_000 || rs[1].KeyID != "00000000000000bb" || !rs[1].At.Equal(now) {
		t.Fatalf("read %+v", rs)
	}
	many := make([][]step, MaxBatch+1)
	for i := range many {
		many[i] = valid(fmt.Sprintf("r%d", i))
	}
	cases := map[string]struct {
		read        func(*BatchForm)
		field, want string
	}{
		"no reports":     {fill(), "reports", "must hold 1 to 1000 reports"},
		"one too many":   {fill(many...), "reports", "must hold 1 to 1000 reports"},
		"refused":        {func(b *BatchForm) { b.Refuse("x", "unknown field") }, "x", "unknown field"},
		"refused first":  {func(b *BatchForm) { fill([]step{setID("")})(b); b.Refuse("reports", "must be an array") }, "reports", "must be an array"},
		"no id":          {fill([]step{setKey("00000000000000aa"), setCost(1)}), "reports[0].id", "required"},
		"no key":         {fill([]step{setID("a"), setCost(1)}), "reports[0].key", "required"},
		"no cost":        {fill([]step{setID("a"), setKey("00000000000000aa")}), "reports[0].cost", "required"},
		"empty id":       {fill([]step{setID(""), setKey("00000000000000aa"), setCost(1)}), "reports[0].id", IDRule},
		"long id":        {fill([]step{setID(strings.Repeat("i", 129)), setKey("00000000000000aa"), setCost(1)}), "reports[0].id", IDRule},
		"spaced id":      {fill([]step{setID("a b"), setKey("00000000000000aa"), setCost(1)}), "reports[0].id", IDRule},
		"bad key":        {fill(valid("a"), []step{setID("b"), setKey("x"), setCost(1)}), "reports[1].key", "must be a key hash (16 hexadecimal characters)"},
		"negative cost":  {fill([]step{setID("a"), setKey("00000000000000aa"), setCost(-1)}), "reports[0].cost", "must be 0 or more"},
		"cost too large": {fill([]step{setID("a"), setKey("00000000000000aa"), setCost(MaxCost + 1)}), "reports[0].cost", "must be at most 1000000"},
		"future":         {fill(append(valid("a"), setAt(now.Add(2*time.Minute)))), "reports[0].at", "must not be in the future"},
		"old":            {fill(append(valid("a"), setAt(now.Add(-MaxReportAge-time.Second)))), "reports[0].at", "must be at most 35 days old"},
		"refused field":  {fill(append(valid("a"), refuse("other", "unknown field"))), "reports[0].other", "unknown field"},
		"unnamed field":  {fill(append(valid("a"), refuse("", "unknown field"))), "reports[0]", "unknown field"},
		"not an object":  {fill(valid("a"), []step{malformed("", "must be a JSON object")}), "reports[1]", "must be a JSON object"},
		"a key twice":    {fill([]step{setID(""), malformed("id", "duplicate key")}), "reports[0].id", "duplicate key"},
		"body twice":     {fill([]step{malformed("body", "duplicate key")}), "reports[0]", "duplicate key"},
		// The first problem met in the client's order is named...
		"first in order": {fill([]step{setCost(-1), setID("")}), "reports[0].cost", "must be 0 or more"},
		"edge's first":   {fill([]step{refuse("cost", "must be a number"), setID("")}), "reports[0].cost", "must be a number"},
		"domain's first": {fill([]step{setID(""), refuse("cost", "must be a number")}), "reports[0].id", IDRule},
		// ...a repeated id before a bad report, a bad report before a
		// repeated id.
		"repeat":            {fill(valid("a"), valid("a")), "reports[1].id", "repeats the id of reports[0]"},
		"repeat before bad": {fill(valid("a"), valid("a"), []step{setID("b"), setCost(1)}), "reports[1].id", "repeats the id of reports[0]"},
		"bad before repeat": {fill(valid("a"), []step{setID("b"), setCost(1)}, valid("a")), "reports[1].key", "required"},
	}
	for name, c := range cases {
		_, err := readBatch(c.read)
		if field, problem := problemOf(t, err); field != c.field || problem != c.want {
			t.Errorf("%s: %s: %s, want %s: %s", name, field, problem, c.field, c.want)
		}
	}
	// The edge reads no further than a refused report or a full batch.
	b := &BatchForm{now: now}
	if f := b.Next(); f == nil {
		t.Fatal("no form for the first report")
	} else {
		f.ID("")
	}
	if f := b.Next(); f != nil {
		t.Error("a form for the report after a refused one")
	}
}

func TestReportForm(t *testing.T) {
	read := func(steps ...step) (Report, error) {
		f := ReportForm{now: now, index: -1}
		for _, s := range steps {
			s(&f)
		}
		return f.report()
	}
	r, err := read(setID("r"), setCost(500_000), setAt(at("2026-11-25T11:59:00Z")))
	if err != nil || r.ID != "r" || r.Cost != 500_000 || !r.At.Equal(at("2026-11-25T11:59:00Z")) {
		t.Fatalf("read %+v, %v", r, err)
	}
	for name, c := range map[string]struct {
		steps       []step
		field, want string
	}{
		"no id":          {[]step{setCost(1)}, "id", "required"},
		"no cost":        {[]step{setID("r")}, "cost", "required"},
		"not an object":  {[]step{malformed("", "must be a JSON object")}, "body", "must be a JSON object"},
		"a key twice":    {[]step{setCost(-1), malformed("cost", "duplicate key")}, "cost", "duplicate key"},
		"unnamed field":  {[]step{setID("r"), setCost(1), refuse("", "unknown field")}, "", "unknown field"},
		"key not wanted": {[]step{setID("r"), setCost(1), refuse("key", "unknown field")}, "key", "unknown field"},
	} {
		_, err := read(c.steps...)
		if field, problem := problemOf(t, err); field != c.field || problem != c.want {
			t.Errorf("%s: %s: %s, want %s: %s", name, field, problem, c.field, c.want)
		}
	}
}

func TestBudgetRequestCheck(t *testing.T) {
	limit := money.Micros(1)
	if err := (BudgetRequest{Limit: &limit}).Check(); err != nil {
		t.Fatalf("a budget of one micro-dollar: %v", err)
	}
	zero, negative := money.Micros(0), money.Micros(-1)
	for name, c := range map[string]struct {
		req  BudgetRequest
		want string
	}{
		"no limit": {BudgetRequest{}, "required"},
		"zero":     {BudgetRequest{Limit: &zero}, "must be more than 0"},
		"negative": {BudgetRequest{Limit: &negative}, "must be more than 0"},
	} {
		if field, problem := problemOf(t, c.req.Check()); field != "limit_usd" || problem != c.want {
			t.Errorf("%s: %s: %s, want limit_usd: %s", name, field, problem, c.want)
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
