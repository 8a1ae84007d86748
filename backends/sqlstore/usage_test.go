package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/aigateway/gateway/internal/invalid"
	"github.com/aigateway/gateway/internal/money"
	"github.com/aigateway/gateway/policy/keys"
	"github.com/aigateway/gateway/policy/spend"
)

// testUsageRecord: reports are stored once by (user, id), also when the
// same batch arrives at two replicas at once, and summed exactly per day.
func testUsageRecord(t *testing.T, b backend) {
	s := b.store(t)
	ctx := testContext(t)
	mustUser(t, s, "alice")
	ws := mustWorkspace(t, s, "alice", "team")
	k := mustRoleKey(t, s, "alice", keys.RoleStandard, ws.ID, time.Now())
	day := time.Date(2026, 11, 25, 10, 0, 0, 0, time.UTC)
	batch := func(prefix string, n int, at time.Time) []recorded {
		out := make([]recorded, n)
		for i := range out {
			out[i] = recorded{UserID: "alice", WorkspaceID: ws.ID, Report: spend.Report{
				ID: fmt.Sprintf("%s-%04d", prefix, i), KeyID: k.ID, Cost: 1, BYOK: i%2 == 0, At: at}}
		}
		return out
	}
	// 1,000 reports of a millionth: exactly one thousandth, twice at once.
	var wg sync.WaitGroup
	accepted := make([]int, 2)
	for i := range accepted {
		wg.Add(1)
		go func() {
			defer wg.Done()
			n, err := recordUsage(ctx, s, batch("a", 1000, day))
			if err != nil {
				t.Error(err)
			}
			accepted[i] = n
		}()
	}
	wg.Wait()
	if accepted[0]+accepted[1] != 1000 {
		t.Fatalf("the same batch sent twice at once was accepted %v times, want 1000 in all", accepted)
	}
	if n, err := recordUsage(ctx, s, batch("a", 1000, day)); err != nil || n != 0 {
		t.Fatalf("replayed: %d accepted, %v", n, err)
	}
	// Yesterday and last month count in the lifetime only.
	if _, err := recordUsage(ctx, s, batch("y", 10, day.AddDate(0, 0, -1))); err != nil {
		t.Fatal(err)
	}
	if _, err := recordUsage(ctx, s, batch("m", 100, day.AddDate(0, -1, 0))); err != nil {
		t.Fatal(err)
	}
	usage, err := s.KeyUsage(ctx, []string{k.ID, "0000000000000000"}, spend.WindowsAt(day))
	if err != nil {
		t.Fatal(err)
	}
	want := spend.Usage{Total: 1110, Daily: 1000, Weekly: 1010, Monthly: 1010, BYOKTotal: 555, BYOKDaily: 500, BYOKWeekly: 505, BYOKMonthly: 505}
	if got := usage[k.ID]; got != want {
		t.Fatalf("usage = %+v\nwant %+v", got, want)
	}
	if _, ok := usage["0000000000000000"]; ok {
		t.Error("a key without reports has usage")
	}
	// Another user's report of the same id is another report.
	mustUser(t, s, "bob")
	other := batch("a", 1, day)
	other[0].UserID = "bob"
	if n, err := recordUsage(ctx, s, other); err != nil || n != 1 {
		t.Fatalf("bob's report with alice's id: %d, %v", n, err)
	}
	known, err := s.KeysOf(ctx, "alice", []string{k.ID, k.ID, "0000000000000001"})
	if err != nil || len(known) != 1 || known[k.ID] != ws.ID {
		t.Fatalf("KeysOf = %v, %v", known, err)
	}
	if known, err := s.KeysOf(ctx, "bob", []string{k.ID}); err != nil || len(known) != 0 {
		t.Fatalf("bob sees alice's key: %v, %v", known, err)
	}
}

// testUsageStoredAsSent: a report's row holds exactly what was reported,
// whatever characters its id has (the batch travels to the database as
// JSON) and to the microsecond of its time.
func testUsageStoredAsSent(t *testing.T, b backend) {
	s := b.store(t)
	ctx := testContext(t)
	mustUser(t, s, "alice")
	ws := mustWorkspace(t, s, "alice", "team")
	k := mustRoleKey(t, s, "alice", keys.RoleStandard, ws.ID, time.Now())
	unbound := mustRoleKey(t, s, "alice", keys.RoleManagement, "", time.Now())
	at := time.Date(2026, 2, 28, 23, 59, 59, 999_999_000, time.UTC)
	sent := []recorded{
		{UserID: "alice", WorkspaceID: ws.ID, Report: spend.Report{ID: `q"uote\back{}[],:null`, KeyID: k.ID, Cost: 9_223_372_036_854_775, BYOK: true, At: at}},
		{UserID: "alice", Report: spend.Report{ID: "no-workspace", KeyID: unbound.ID, Cost: 0, At: at.Add(time.Microsecond)}},
	}
	if n, err := recordUsage(ctx, s, sent); err != nil || n != 2 {
		t.Fatalf("RecordUsage = %d, %v", n, err)
	}
	if n, err := recordUsage(ctx, s, sent); err != nil || n != 0 {
		t.Fatalf("replayed: %d accepted, %v", n, err)
	}
	for _, want := range sent {
		var got recorded
		var ws sql.NullString
		var cost int64
		err := s.r.QueryRowContext(ctx, `SELECT user_id, key_id, workspace_id, cost, byok, at
			FROM usage_reports WHERE id = $1`, want.ID).Scan(&got.UserID, &got.KeyID, &ws, &cost, &got.BYOK, timeCol{&got.At})
		if err != nil {
			t.Fatalf("report %q: %v", want.ID, err)
		}
		got.ID, got.WorkspaceID, got.Cost = want.ID, canonicalOr(ws.String), money.Micros(cost)
		if got != want {
			t.Errorf("stored %+v\nsent   %+v", got, want)
		}
	}
}

// testUsageOverflow: a batch that would carry a key's daily sum past what
// it holds is refused as the caller's (a problem of reports), and nothing
// of it is kept: the sums are as they were, and its reports can be sent
// again.
func testUsageOverflow(t *testing.T, b backend) {
	s := b.store(t)
	ctx := testContext(t)
	mustUser(t, s, "alice")
	k := mustRoleKey(t, s, "alice", keys.RoleStandard, "", time.Now())
	at := time.Date(2026, 11, 25, 10, 0, 0, 0, time.UTC)
	report := func(id string, cost money.Micros) []recorded {
		return []recorded{{UserID: "alice", Report: spend.Report{ID: id, KeyID: k.ID, Cost: cost, At: at}}}
	}
	if n, err := recordUsage(ctx, s, report("big", math.MaxInt64-10)); err != nil || n != 1 {
		t.Fatalf("RecordUsage = %d, %v", n, err)
	}
	if _, err := recordUsage(ctx, s, report("over", 11)); len(invalid.Fields(err)) != 1 || invalid.Fields(err)[0].Name != "reports" {
		t.Fatalf("a sum past the largest: %v, want a problem of reports", err)
	}
	usage, err := s.KeyUsage(ctx, []string{k.ID}, spend.WindowsAt(at))
	if err != nil || usage[k.ID].Daily != math.MaxInt64-10 {
		t.Fatalf("usage after the refused batch: %+v, %v", usage[k.ID], err)
	}
	if n, err := recordUsage(ctx, s, report("over", 10)); err != nil || n != 1 {
		t.Fatalf("a report of the refused batch's id sent again: %d, %v", n, err)
	}
}

// testBudgets: budgets per interval, the order checked under the lock, the
// standings the refresher reads.
func testBudgets(t *testing.T, b backend) {
	s := b.store(t)
	ctx := testContext(t)
	mustUser(t, s, "alice")
	ws := mustWorkspace(t, s, "alice", "team")
	at := time.Date(2026, 11, 25, 10, 0, 0, 0, time.UTC)
	put := func(iv spend.Interval, limit money.Micros, byok *bool) (spend.Budget, bool, error) {
		return s.PutBudget(ctx, spend.Budget{ID: uuid.NewString(), WorkspaceID: ws.ID, Interval: iv, Limit: limit, CreatedAt: at, UpdatedAt: at},
			byok, func(set map[spend.Interval]money.Micros) error { return spend.CheckOrder(set, iv, limit) })
	}
	first, created, err := put(spend.Weekly, 100, nil)
	if err != nil || !created {
		t.Fatalf("create: %v %v", created, err)
	}
	yes := true
	again, created, err := put(spend.Weekly, 150, &yes)
	if err != nil || created || again.ID != first.ID || again.Limit != 150 {
		t.Fatalf("replace: %+v %v %v", again, created, err)
	}
	if _, _, err := put(spend.Daily, 150, nil); !errors.Is(err, spend.ErrOrder) {
		t.Fatalf("daily = weekly: %v, want ErrOrder", err)
	}
	if _, _, err := put(spend.Lifetime, 1000, nil); err != nil {
		t.Fatal(err)
	}
	list, byok, err := s.Budgets(ctx, ws.ID)
	if err != nil || len(list) != 2 || !byok {
		t.Fatalf("budgets: %+v, %v, %v", list, byok, err)
	}
	if err := s.DeleteBudget(ctx, ws.ID, spend.Daily); !errors.Is(err, spend.ErrNoBudget) {
		t.Fatalf("delete a budget never set: %v", err)
	}

	k := mustRoleKey(t, s, "alice", keys.RoleStandard, ws.ID, at)
	if _, err := recordUsage(ctx, s, []recorded{{UserID: "alice", WorkspaceID: ws.ID,
		Report: spend.Report{ID: "r1", KeyID: k.ID, Cost: 150, At: at}}}); err != nil {
		t.Fatal(err)
	}
	limit := money.Micros(150)
	if _, err := s.UpdateKey(ctx, "alice", k.ID, keys.UpdateRequest{Limit: keys.Optional[*money.Micros]{Set: true, Value: &limit}}, at); err != nil {
		t.Fatal(err)
	}
	// A deleted key's usage still counts toward its workspace's budgets.
	if err := s.DeleteKey(ctx, "alice", k.ID, at); err != nil {
		t.Fatal(err)
	}
	ks, bs, err := s.Standings(ctx, spend.WindowsAt(at))
	if err != nil {
		t.Fatal(err)
	}
	if len(ks) != 0 {
		t.Errorf("a deleted key stands: %+v", ks)
	}
	snap := spend.NewSnapshot(spend.WindowsAt(at), ks, bs)
	if err := snap.Decide(&keys.APIKey{ID: "x", WorkspaceID: ws.ID}); !errors.Is(err, spend.ErrBudget) {
		t.Errorf("workspace at its weekly budget: %v (standings %+v)", err, bs)
	}
	if err := s.DeleteBudget(ctx, ws.ID, spend.Weekly); err != nil {
		t.Fatal(err)
	}
	_, bs, _ = s.Standings(ctx, spend.WindowsAt(at))
	if err := spend.NewSnapshot(spend.WindowsAt(at), nil, bs).Decide(&keys.APIKey{ID: "x", WorkspaceID: ws.ID}); err != nil {
		t.Errorf("after the budget's delete: %v", err)
	}
}

// testKeyStanding: a key with a limit stands with its usage.
func testKeyStanding(t *testing.T, b backend) {
	s := b.store(t)
	ctx := testContext(t)
	mustUser(t, s, "alice")
	at := time.Date(2026, 11, 25, 10, 0, 0, 0, time.UTC)
	k := mustRoleKey(t, s, "alice", keys.RoleStandard, "", at)
	limit := money.Micros(2_500_000)
	if _, err := s.UpdateKey(ctx, "alice", k.ID, keys.UpdateRequest{
		Limit:      keys.Optional[*money.Micros]{Set: true, Value: &limit},
		LimitReset: keys.Optional[keys.Reset]{Set: true, Value: keys.ResetDaily}}, at); err != nil {
		t.Fatal(err)
	}
	if _, err := recordUsage(ctx, s, []recorded{{UserID: "alice",
		Report: spend.Report{ID: "r1", KeyID: k.ID, Cost: 2_500_000, At: at}}}); err != nil {
		t.Fatal(err)
	}
	ks, _, err := s.Standings(ctx, spend.WindowsAt(at))
	if err != nil || len(ks) != 1 || ks[0].Limit != limit || ks[0].Usage.Daily != 2_500_000 || ks[0].Reset != keys.ResetDaily {
		t.Fatalf("standings: %+v, %v", ks, err)
	}
	// Tomorrow the daily window is empty again.
	ks, _, _ = s.Standings(ctx, spend.WindowsAt(at.AddDate(0, 0, 1)))
	if len(ks) != 1 || ks[0].Usage.Daily != 0 || ks[0].Usage.Total != 2_500_000 {
		t.Fatalf("tomorrow: %+v", ks)
	}
}

// testUsageDaily: the sums per day of one key, of one workspace (its
// deleted keys included) and of all of a user's keys, within the days
// asked for and nothing of another user's.
func testUsageDaily(t *testing.T, b backend) {
	s := b.store(t)
	ctx := testContext(t)
	mustUser(t, s, "alice")
	mustUser(t, s, "bob")
	team := mustWorkspace(t, s, "alice", "team")
	lab := mustWorkspace(t, s, "alice", "lab")
	theirs := mustWorkspace(t, s, "bob", "team")
	at := time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC) // the last day of a month
	k1 := mustRoleKey(t, s, "alice", keys.RoleStandard, team.ID, at)
	k2 := mustRoleKey(t, s, "alice", keys.RoleStandard, team.ID, at)
	k3 := mustRoleKey(t, s, "alice", keys.RoleStandard, lab.ID, at)
	mgmt := mustRoleKey(t, s, "alice", keys.RoleManagement, "", at)
	kb := mustRoleKey(t, s, "bob", keys.RoleStandard, theirs.ID, at)
	n := 0
	report := func(user string, k keys.APIKey, cost money.Micros, byok bool, when time.Time) recorded {
		n++
		return recorded{UserID: user, WorkspaceID: k.WorkspaceID,
			Report: spend.Report{ID: fmt.Sprintf("r%d", n), KeyID: k.ID, Cost: cost, BYOK: byok, At: when}}
	}
	dec1 := at.AddDate(0, 0, 1)
	if _, err := recordUsage(ctx, s, []recorded{
		report("alice", k1, 1_000_000, false, at),
		report("alice", k1, 250_000, true, at.Add(time.Hour)),
		report("alice", k2, 2, false, dec1),
		report("alice", k3, 30, true, dec1),
		report("alice", mgmt, 400, false, dec1),
		report("alice", k1, 7, false, at.AddDate(0, 0, -5)), // before the days asked for
		report("bob", kb, 999, false, dec1),
	}); err != nil {
		t.Fatal(err)
	}
	// A deleted key's days stay its workspace's and its user's.
	if err := s.DeleteKey(ctx, "alice", k2.ID, dec1); err != nil {
		t.Fatal(err)
	}
	first, last := spend.Day(at)-1, spend.Day(dec1)
	cases := []struct {
		name  string
		scope spend.DailyScope
		want  []spend.DaySum
	}{
		{"key", spend.DailyScope{UserID: "alice", KeyID: k1.ID},
			[]spend.DaySum{{Day: spend.Day(at), Cost: 1_250_000, BYOK: 250_000}}},
		{"deleted key", spend.DailyScope{UserID: "alice", KeyID: k2.ID},
			[]spend.DaySum{{Day: spend.Day(dec1), Cost: 2}}},
		{"workspace", spend.DailyScope{UserID: "alice", WorkspaceID: team.ID},
			[]spend.DaySum{{Day: spend.Day(at), Cost: 1_250_000, BYOK: 250_000}, {Day: spend.Day(dec1), Cost: 2}}},
		{"workspace in capitals", spend.DailyScope{UserID: "alice", WorkspaceID: strings.ToUpper(lab.ID)},
			[]spend.DaySum{{Day: spend.Day(dec1), Cost: 30, BYOK: 30}}},
		{"user", spend.DailyScope{UserID: "alice"},
			[]spend.DaySum{{Day: spend.Day(at), Cost: 1_250_000, BYOK: 250_000}, {Day: spend.Day(dec1), Cost: 432, BYOK: 30}}},
		{"other user", spend.DailyScope{UserID: "bob"}, []spend.DaySum{{Day: spend.Day(dec1), Cost: 999}}},
		{"nobody", spend.DailyScope{UserID: "carol"}, nil},
		{"not a workspace id", spend.DailyScope{UserID: "alice", WorkspaceID: "team"}, nil},
	}
	for _, c := range cases {
		got, err := s.DailyUsage(ctx, c.scope, first, last)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s: %+v\nwant %+v", c.name, got, c.want)
		}
	}
	// The range bounds both ends: one day only.
	got, err := s.DailyUsage(ctx, spend.DailyScope{UserID: "alice"}, spend.Day(dec1), spend.Day(dec1))
	if err != nil || len(got) != 1 || got[0].Day != spend.Day(dec1) {
		t.Errorf("the last day alone: %+v, %v", got, err)
	}
}

// recorded is a report with its user and its key's workspace, as the tests
// write them; recordUsage stores them in one batch per user.
type recorded struct {
	spend.Report
	UserID      string
	WorkspaceID string
}

func recordUsage(ctx context.Context, s *Store, rs []recorded) (int, error) {
	var users []string
	batches := map[string]*spend.Batch{}
	for _, r := range rs {
		b := batches[r.UserID]
		if b == nil {
			b = &spend.Batch{UserID: r.UserID, Workspaces: map[string]string{}}
			batches[r.UserID] = b
			users = append(users, r.UserID)
		}
		b.Reports = append(b.Reports, r.Report)
		b.Workspaces[r.KeyID] = r.WorkspaceID
	}
	accepted := 0
	for _, u := range users {
		n, err := s.RecordUsage(ctx, *batches[u])
		if err != nil {
			return accepted, err
		}
		accepted += n
	}
	return accepted, nil
}
