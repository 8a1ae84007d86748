package spend

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/aigateway/gateway/internal/money"
	"github.com/aigateway/gateway/policy/keys"
)

func TestTotalsKeepTheCurrentWindows(t *testing.T) {
	day := Day(at("2026-11-30T12:00:00Z")) // a Monday, the last day of a month; tomorrow is in its week
	var tot Totals
	for _, r := range []struct {
		day  int64
		cost money.Micros
		byok bool
	}{
		{day - 40, 1000, false}, // counted all time only, in time
		{day - 1, 100, true},    // yesterday: last week, this month
		{day, 10, false},
		{day + 1, 1, false}, // tomorrow, a minute ahead: this week, next month
		{day - 2, 5, false}, // older than both daily windows held: all time only
	} {
		if !tot.Add(r.day, r.cost, r.byok) {
			t.Fatal("overflow")
		}
	}
	u := tot.Usage(WindowsAt(at("2026-11-30T12:00:00Z")))
	want := Usage{Total: 1116, Daily: 10, Weekly: 11, Monthly: 115, BYOKTotal: 100, BYOKMonthly: 100}
	if u != want {
		t.Errorf("today: %+v\nwant  %+v", u, want)
	}
	// Tomorrow: a new day, week and month, holding the one report.
	if u := tot.Usage(WindowsAt(at("2026-12-01T00:00:00Z"))); u.Daily != 1 || u.Weekly != 11 || u.Monthly != 1 {
		t.Errorf("tomorrow: %+v", u)
	}
	// The day after: nothing in the day.
	if u := tot.Usage(WindowsAt(at("2026-12-02T00:00:00Z"))); u.Daily != 0 || u.Weekly != 11 || u.Monthly != 1 {
		t.Errorf("the day after: %+v", u)
	}
	big := Totals{Total: MaxCost * 9_000_000}
	if big.Add(day, MaxCost*1_000_000, false) || big.Total != MaxCost*9_000_000 {
		t.Error("an overflowing add changed the totals")
	}
}

func TestTotalsMergeTakesTheLater(t *testing.T) {
	day := Day(now)
	var early, late Totals
	early.Add(day-1, 5, false)
	late = early
	late.Add(day, 7, true)
	late.Add(day-1, 1, false)
	for _, m := range []Totals{early.Merge(late), late.Merge(early), late.Merge(late)} {
		if m != late {
			t.Errorf("merged %+v\nwant   %+v", m, late)
		}
	}
}

// feedStore answers StandingsSince with what the test sets, counting reads.
type feedStore struct {
	Store
	all, since Changes
	reads      []bool // all, per read
	err        error
}

func (f *feedStore) StandingsSince(_ context.Context, cursor int64, all bool) (Changes, error) {
	f.reads = append(f.reads, all)
	if f.err != nil {
		return Changes{}, f.err
	}
	if all {
		return f.all, nil
	}
	c := f.since
	f.since = Changes{Next: c.Next}
	return c, nil
}

func spentTotals(day int64, cost money.Micros) Totals {
	var t Totals
	t.Add(day, cost, false)
	return t
}

// TestEnforcerReadsWhatChanged: with a ChangeFeed the first refresh reads
// every standing, the next ones only what changed, and the decisions are
// those NewSnapshot would take from the same standings; a turned window
// decides every key again without a read of everything.
func TestEnforcerReadsWhatChanged(t *testing.T) {
	ctx := context.Background()
	clock := at("2026-11-25T23:59:59Z")
	day := Day(clock)
	f := &feedStore{all: Changes{Next: 10,
		Keys: []KeyChange{
			{KeyID: "spent", Limit: 5, Reset: keys.ResetDaily, Totals: spentTotals(day, 5)},
			{KeyID: "fine", Limit: 5, Reset: keys.ResetDaily, Totals: spentTotals(day, 4)},
		},
		Workspaces: []WorkspaceChange{{WorkspaceID: "ws", Budgets: []Budget{{WorkspaceID: "ws", Interval: Weekly, Limit: 9}},
			Totals: spentTotals(day, 9)}},
	}}
	e := &Enforcer{Store: f, now: func() time.Time { return clock }}
	if err := e.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	decide := func(id, ws string) error {
		return e.Decide(&keys.APIKey{ID: id, WorkspaceID: ws, Role: keys.RoleStandard})
	}
	if !errors.Is(decide("spent", ""), ErrKeyLimit) || decide("fine", "") != nil || !errors.Is(decide("x", "ws"), ErrBudget) {
		t.Fatalf("first view: %v %v %v", decide("spent", ""), decide("fine", ""), decide("x", "ws"))
	}
	// fine spends its last micro-dollar; the workspace loses its budget.
	f.since = Changes{Next: 11,
		Keys:       []KeyChange{{KeyID: "fine", Limit: 5, Reset: keys.ResetDaily, Totals: spentTotals(day, 5)}},
		Workspaces: []WorkspaceChange{{WorkspaceID: "ws", Totals: spentTotals(day, 9)}},
	}
	if err := e.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	if !errors.Is(decide("fine", ""), ErrKeyLimit) || !errors.Is(decide("spent", ""), ErrKeyLimit) || decide("x", "ws") != nil {
		t.Errorf("after the changes: %v %v %v", decide("fine", ""), decide("spent", ""), decide("x", "ws"))
	}
	// Midnight: both keys' days are new, with no change read.
	clock = clock.Add(time.Second)
	if err := e.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	if decide("fine", "") != nil || decide("spent", "") != nil {
		t.Errorf("a new day: %v %v", decide("fine", ""), decide("spent", ""))
	}
	if want := []bool{true, false, false}; len(f.reads) != 3 || f.reads[0] != want[0] || f.reads[1] || f.reads[2] {
		t.Errorf("reads (all?): %v, want %v", f.reads, want)
	}
	// A key gone stops being refused.
	f.since = Changes{Next: 12, Keys: []KeyChange{{KeyID: "spent", Gone: true}}}
	clock = clock.Add(-time.Second) // back in the day it was spent
	_ = e.Refresh(ctx)
	if decide("spent", "") != nil || !errors.Is(decide("fine", ""), ErrKeyLimit) {
		t.Errorf("after spent went: %v %v", decide("spent", ""), decide("fine", ""))
	}
	// A read older than the view (a refresh begun before the last one
	// applied, beside a change made through this replica) changes nothing.
	f.since = Changes{Next: 11, Keys: []KeyChange{{KeyID: "fine", Limit: 5, Reset: keys.ResetDaily, Totals: spentTotals(day, 4)}}}
	if err := e.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	if !errors.Is(decide("fine", ""), ErrKeyLimit) {
		t.Errorf("a stale read undid a newer one: %v", decide("fine", ""))
	}
}

// TestEnforcerLearnsWhatItRecorded: the totals a recording on this
// replica left refuse the key or workspace they cross at once; a refresh
// that read older totals does not undo it; nothing is learnt of keys
// without a limit or before the first refresh.
func TestEnforcerLearnsWhatItRecorded(t *testing.T) {
	ctx := context.Background()
	clock := at("2026-11-25T12:00:00Z")
	day := Day(clock)
	f := &feedStore{all: Changes{Next: 1,
		Keys:       []KeyChange{{KeyID: "k", Limit: 10, Totals: spentTotals(day, 9)}},
		Workspaces: []WorkspaceChange{{WorkspaceID: "ws", Budgets: []Budget{{WorkspaceID: "ws", Interval: Daily, Limit: 20}}, Totals: spentTotals(day, 9)}},
	}}
	e := &Enforcer{Store: f, now: func() time.Time { return clock }}
	e.Learn(Touched{Keys: map[string]Totals{"k": spentTotals(day, 10)}})
	if err := e.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	k := &keys.APIKey{ID: "k", Role: keys.RoleStandard}
	other := &keys.APIKey{ID: "other", WorkspaceID: "ws", Role: keys.RoleStandard}
	if e.Decide(k) != nil {
		t.Fatal("learnt before the first refresh")
	}
	e.Learn(Touched{Keys: map[string]Totals{"k": spentTotals(day, 10), "free": spentTotals(day, 1e9)},
		Workspaces: map[string]Totals{"ws": spentTotals(day, 20)}})
	if !errors.Is(e.Decide(k), ErrKeyLimit) || !errors.Is(e.Decide(other), ErrBudget) {
		t.Errorf("after the crossing report: %v %v", e.Decide(k), e.Decide(other))
	}
	if e.Decide(&keys.APIKey{ID: "free", Role: keys.RoleStandard}) != nil {
		t.Error("a key without a limit is refused")
	}
	// The refresh read the totals before the report.
	f.since = Changes{Next: 2, Keys: []KeyChange{{KeyID: "k", Limit: 10, Totals: spentTotals(day, 9)}}}
	if err := e.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	if !errors.Is(e.Decide(k), ErrKeyLimit) {
		t.Error("an older read undid what was learnt")
	}
	// A raised limit is read: served again.
	f.since = Changes{Next: 3, Keys: []KeyChange{{KeyID: "k", Limit: 11, Totals: spentTotals(day, 10)}}}
	if err := e.Refresh(ctx); err != nil || e.Decide(k) != nil {
		t.Errorf("after the raise: %v %v", err, e.Decide(k))
	}
}
