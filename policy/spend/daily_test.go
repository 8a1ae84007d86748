package spend

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/aigateway/gateway/policy/keys"
	"github.com/aigateway/gateway/workspace"
)

// dailyStore answers the history from the sums it holds, whatever the
// scope, and records what it was asked.
type dailyStore struct {
	Store
	keysOf      map[string]map[string]string // user -> key -> workspace
	sums        []DaySum
	scope       DailyScope
	first, last int64
}

func (d *dailyStore) KeysOf(_ context.Context, userID string, ids []string) (map[string]string, error) {
	out := map[string]string{}
	for _, id := range ids {
		if ws, ok := d.keysOf[userID][id]; ok {
			out[id] = ws
		}
	}
	return out, nil
}

func (d *dailyStore) DailyUsage(_ context.Context, scope DailyScope, first, last int64) ([]DaySum, error) {
	d.scope, d.first, d.last = scope, first, last
	return d.sums, nil
}

// workspacesOf resolves the workspaces (by id or slug) of two users.
func workspacesOf(_ context.Context, userID, ref string) (string, error) {
	own := map[string]map[string]string{
		"u1": {"w1": "w1", "team": "w1", "w2": "w2", "lab": "w2"},
		"u2": {"w9": "w9", "theirs": "w9"},
	}
	if id, ok := own[userID][ref]; ok {
		return id, nil
	}
	return "", fmt.Errorf("lookup %q: %w", ref, workspace.ErrNotFound)
}

const (
	ownKey   = "00000000000000a1" // u1's, in w1
	otherKey = "00000000000000a2" // u1's, in w2
	theirKey = "00000000000000b1" // u2's
	noKey    = "00000000000000ff"
)

func TestHistoryAcrossAMonthEnd(t *testing.T) {
	// Three days ending on 1 December: 29 and 30 November, 1 December.
	first, last := HistoryDays(at("2026-12-01T23:59:59Z"), 3)
	if last-first != 2 || last != Day(at("2026-12-01T00:00:00Z")) {
		t.Fatalf("days %d to %d", first, last)
	}
	days := FillDays(first, last, []DaySum{
		{Day: Day(at("2026-11-30T12:00:00Z")), Cost: 1_500_000, BYOK: 250_000},
		{Day: Day(at("2026-11-28T00:00:00Z")), Cost: 9}, // before the first day
		{Day: last + 1, Cost: 9},                        // after the last
	})
	want := []struct {
		date       string
		cost, byok int64
	}{{"2026-11-29", 0, 0}, {"2026-11-30", 1_500_000, 250_000}, {"2026-12-01", 0, 0}}
	if len(days) != len(want) {
		t.Fatalf("%d days, want %d: %+v", len(days), len(want), days)
	}
	for i, w := range want {
		d := days[i]
		if got := d.Date.Format(time.DateOnly); got != w.date || int64(d.Cost) != w.cost || int64(d.BYOK) != w.byok ||
			d.Date.Location() != time.UTC || !d.Date.Equal(d.Date.Truncate(24*time.Hour)) {
			t.Errorf("day %d: %s %d %d, want %s %d %d", i, got, d.Cost, d.BYOK, w.date, w.cost, w.byok)
		}
	}
	// One day is today alone; the longest history is 90 days, oldest first.
	if first, last := HistoryDays(now, 1); first != last || last != Day(now) {
		t.Errorf("one day: %d to %d", first, last)
	}
	f, l := HistoryDays(now, MaxHistoryDays)
	long := FillDays(f, l, nil)
	if len(long) != MaxHistoryDays || long[0].Date.Format(time.DateOnly) != "2026-08-28" ||
		long[89].Date.Format(time.DateOnly) != "2026-11-25" {
		t.Errorf("90 days: %d from %v to %v", len(long), long[0].Date, long[len(long)-1].Date)
	}
}

func TestDailyUsageFillsZeros(t *testing.T) {
	st := &dailyStore{sums: []DaySum{{Day: Day(now), Cost: 2_500_000}}}
	svc := NewService(st, nil, nil)
	svc.now = func() time.Time { return now }
	caller := &keys.APIKey{ID: ownKey, UserID: "u1", Role: keys.RoleStandard, WorkspaceID: "w1"}
	days, err := svc.DailyUsage(context.Background(), caller, DailyQuery{Days: DefaultHistoryDays}, workspacesOf)
	if err != nil {
		t.Fatal(err)
	}
	if len(days) != 30 || days[29].Cost != 2_500_000 || days[0].Cost != 0 || days[0].Date.Format(time.DateOnly) != "2026-10-27" {
		t.Fatalf("days: %d, first %+v, last %+v", len(days), days[0], days[len(days)-1])
	}
	if st.last != Day(now) || st.last-st.first != 29 || st.scope != (DailyScope{UserID: "u1", KeyID: ownKey}) {
		t.Errorf("asked the store for %+v, days %d to %d", st.scope, st.first, st.last)
	}
}

// The scope table: who may see which usage, and how everything else is
// refused without telling whether the id exists.
func TestResolveScope(t *testing.T) {
	st := &dailyStore{keysOf: map[string]map[string]string{
		"u1": {ownKey: "w1", otherKey: "w2"},
		"u2": {theirKey: "w9"},
	}}
	svc := NewService(st, nil, nil)
	mgmt := &keys.APIKey{ID: "00000000000000c1", UserID: "u1", Role: keys.RoleManagement}
	standard := &keys.APIKey{ID: ownKey, UserID: "u1", Role: keys.RoleStandard, WorkspaceID: "w1"}
	service := &keys.APIKey{ID: "00000000000000d1", UserID: "u1", Role: keys.RoleService}
	cases := []struct {
		name   string
		caller *keys.APIKey
		q      DailyQuery
		want   DailyScope
		err    error
	}{
		{"management, all keys", mgmt, DailyQuery{}, DailyScope{UserID: "u1"}, nil},
		{"management, own user's key", mgmt, DailyQuery{KeyID: otherKey}, DailyScope{UserID: "u1", KeyID: otherKey}, nil},
		{"management, other user's key", mgmt, DailyQuery{KeyID: theirKey}, DailyScope{}, keys.ErrKeyNotFound},
		{"management, unknown key", mgmt, DailyQuery{KeyID: noKey}, DailyScope{}, keys.ErrKeyNotFound},
		{"management, malformed key", mgmt, DailyQuery{KeyID: "nope"}, DailyScope{}, keys.ErrKeyNotFound},
		{"management, own workspace by slug", mgmt, DailyQuery{Workspace: "lab"}, DailyScope{UserID: "u1", WorkspaceID: "w2"}, nil},
		{"management, other user's workspace", mgmt, DailyQuery{Workspace: "w9"}, DailyScope{}, workspace.ErrNotFound},
		{"management, other user's slug", mgmt, DailyQuery{Workspace: "theirs"}, DailyScope{}, workspace.ErrNotFound},
		{"management, unknown workspace", mgmt, DailyQuery{Workspace: "nowhere"}, DailyScope{}, workspace.ErrNotFound},

		{"standard, itself", standard, DailyQuery{}, DailyScope{UserID: "u1", KeyID: ownKey}, nil},
		{"standard, its own hash", standard, DailyQuery{KeyID: ownKey}, DailyScope{UserID: "u1", KeyID: ownKey}, nil},
		{"standard, its workspace", standard, DailyQuery{Workspace: "w1"}, DailyScope{UserID: "u1", WorkspaceID: "w1"}, nil},
		{"standard, its workspace's slug", standard, DailyQuery{Workspace: "team"}, DailyScope{UserID: "u1", WorkspaceID: "w1"}, nil},
		{"standard, own user's key", standard, DailyQuery{KeyID: otherKey}, DailyScope{}, keys.ErrForbidden},
		{"standard, other user's key", standard, DailyQuery{KeyID: theirKey}, DailyScope{}, keys.ErrForbidden},
		{"standard, unknown key", standard, DailyQuery{KeyID: noKey}, DailyScope{}, keys.ErrForbidden},
		{"standard, own user's workspace", standard, DailyQuery{Workspace: "lab"}, DailyScope{}, keys.ErrForbidden},
		{"standard, other user's workspace", standard, DailyQuery{Workspace: "w9"}, DailyScope{}, keys.ErrForbidden},
		{"standard, unknown workspace", standard, DailyQuery{Workspace: "nowhere"}, DailyScope{}, keys.ErrForbidden},

		{"service, itself", service, DailyQuery{}, DailyScope{UserID: "u1", KeyID: service.ID}, nil},
		{"service, a key of its user", service, DailyQuery{KeyID: ownKey}, DailyScope{}, keys.ErrForbidden},
		{"service, a workspace of its user", service, DailyQuery{Workspace: "w1"}, DailyScope{}, keys.ErrForbidden},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			c.q.Days = 30
			got, err := svc.ResolveScope(context.Background(), c.caller, c.q, workspacesOf)
			if c.err != nil {
				if !errors.Is(err, c.err) {
					t.Fatalf("err = %v, want %v", err, c.err)
				}
				// The workspace route's 404 and the key routes' 404 are
				// the answer to another user's id too: nothing else.
				if errors.Is(err, keys.ErrForbidden) && (errors.Is(err, keys.ErrKeyNotFound) || errors.Is(err, workspace.ErrNotFound)) {
					t.Fatalf("err = %v is both a refusal and a not found", err)
				}
				return
			}
			if err != nil || got != c.want {
				t.Fatalf("scope = %+v, %v; want %+v", got, err, c.want)
			}
		})
	}
}

func TestDailyQueryErrors(t *testing.T) {
	svc := NewService(&dailyStore{}, nil, nil)
	mgmt := &keys.APIKey{ID: "00000000000000c1", UserID: "u1", Role: keys.RoleManagement}
	for _, c := range []struct {
		q     DailyQuery
		field string
	}{
		{DailyQuery{Days: 0}, "days"},
		{DailyQuery{Days: MaxHistoryDays + 1}, "days"},
		{DailyQuery{Days: 7, Workspace: "w1", KeyID: ownKey}, "key"},
	} {
		_, err := svc.ResolveScope(context.Background(), mgmt, c.q, workspacesOf)
		var qe *QueryError
		if !errors.As(err, &qe) || qe.Field != c.field || !errors.Is(err, ErrInvalidQuery) {
			t.Errorf("%+v: %v, want a problem of %q", c.q, err, c.field)
		}
	}
}
