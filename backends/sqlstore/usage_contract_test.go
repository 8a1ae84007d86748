package sqlstore

import (
	"cmp"
	"errors"
	"fmt"
	"reflect"
	"runtime"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/aigateway/gateway/internal/invalid"
	"github.com/aigateway/gateway/internal/money"
	"github.com/aigateway/gateway/policy/keys"
	"github.com/aigateway/gateway/policy/spend"
)

// TestUsageContract is the behaviour of usage every database must show,
// beside runContract's: each subtest on a fresh database of each.
func TestUsageContract(t *testing.T) {
	t.Parallel()
	tests := []contractCase{
		{"Served", testUsageServed},
		{"ReplayConflict", testUsageReplayConflict},
		{"StandingsFeed", testUsageStandingsFeed},
		{"Upgrade", testUsageUpgrade},
		{"Activity", testUsageActivity},
		{"Retention", testUsageRetention},
		{"Partitions", testUsagePartitions},
		{"Digest", testUsageDigest},
		{"TotalsMadeDuringIngest", testUsageTotalsMadeDuringIngest},
	}
	runOnBothDatabases(t, tests)
}

// rollupRow is a row of usage_rollups as the tests read it back.
type rollupRow struct {
	Key                           string
	Day                           int64
	Model, Provider, Endpoint     string
	BYOK                          bool
	Requests, Cost                int64
	Prompt, Completion, Reasoning int64
}

func rollupsOf(t *testing.T, s *Store, keyID string) []rollupRow {
	t.Helper()
	rows, err := s.r.QueryContext(testContext(t), `SELECT key_id, day, model, provider_name, endpoint_id, byok, requests, cost,
		prompt_tokens, completion_tokens, reasoning_tokens FROM usage_rollups WHERE key_id = $1
		ORDER BY day, model, provider_name, endpoint_id, byok`, keyID)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []rollupRow
	for rows.Next() {
		var r rollupRow
		if err := rows.Scan(&r.Key, &r.Day, &r.Model, &r.Provider, &r.Endpoint, &r.BYOK, &r.Requests, &r.Cost,
			&r.Prompt, &r.Completion, &r.Reasoning); err != nil {
			t.Fatal(err)
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// testUsageServed: what a report says was served is stored as sent, and
// rolled up per key, day, model, provider, endpoint and BYOK with the
// count of requests and the sums of tokens; the daily history sums the
// rollups of a day whatever was served.
func testUsageServed(t *testing.T, b backend) {
	s := b.store(t)
	ctx := testContext(t)
	mustUser(t, s, "alice")
	ws := mustWorkspace(t, s, "alice", "team")
	k := mustRoleKey(t, s, "alice", keys.RoleStandard, ws.ID, time.Now())
	at := time.Date(2026, 11, 25, 10, 0, 0, 0, time.UTC)
	day := spend.Day(at)
	n := 0
	report := func(model, provider, endpoint string, byok bool, cost, p, c, r int64, when time.Time) recorded {
		n++
		return recorded{UserID: "alice", WorkspaceID: ws.ID, Report: spend.Report{ID: fmt.Sprintf("r%d", n), KeyID: k.ID,
			Cost: money.Micros(cost), BYOK: byok, At: when, AtGiven: true, Model: model, Provider: provider, Endpoint: endpoint,
			PromptTokens: p, CompletionTokens: c, ReasoningTokens: r}}
	}
	sent := []recorded{
		report("openai/gpt-4.1", "OpenAI", "ep-1", false, 100, 10, 20, 0, at),
		report("openai/gpt-4.1", "OpenAI", "ep-1", false, 50, 1, 2, 3, at.Add(time.Hour)),
		report("openai/gpt-4.1", "OpenAI", "ep-1", true, 7, 5, 5, 5, at),
		report("openai/gpt-4.1", "Azure", "ep-2", false, 1, 1, 1, 1, at),
		report("anthropic/claude-sonnet-4", "Anthropic", "", false, 1000, 100, 200, 300, at.AddDate(0, 0, 1)),
		report("", "", "", false, 3, 0, 0, 0, at),
	}
	if got, err := recordUsage(ctx, s, sent); err != nil || got != len(sent) {
		t.Fatalf("RecordUsage = %d, %v", got, err)
	}
	// A second batch adds to the same rows.
	if _, err := recordUsage(ctx, s, []recorded{report("openai/gpt-4.1", "OpenAI", "ep-1", false, 1, 1, 1, 1, at)}); err != nil {
		t.Fatal(err)
	}
	want := []rollupRow{
		{k.ID, day, "", "", "", false, 1, 3, 0, 0, 0},
		{k.ID, day, "openai/gpt-4.1", "Azure", "ep-2", false, 1, 1, 1, 1, 1},
		{k.ID, day, "openai/gpt-4.1", "OpenAI", "ep-1", false, 3, 151, 12, 23, 4},
		{k.ID, day, "openai/gpt-4.1", "OpenAI", "ep-1", true, 1, 7, 5, 5, 5},
		{k.ID, day + 1, "anthropic/claude-sonnet-4", "Anthropic", "", false, 1, 1000, 100, 200, 300},
	}
	if got := rollupsOf(t, s, k.ID); !reflect.DeepEqual(got, want) {
		t.Errorf("rollups:\n%+v\nwant\n%+v", got, want)
	}
	for _, w := range sent {
		var got spend.Report
		err := s.r.QueryRowContext(ctx, `SELECT key_id, cost, byok, at, model, provider_name, endpoint_id,
			prompt_tokens, completion_tokens, reasoning_tokens FROM usage_reports WHERE user_id = 'alice' AND id = $1`, w.ID).
			Scan(&got.KeyID, (*int64)(&got.Cost), &got.BYOK, timeCol{&got.At}, &got.Model, &got.Provider, &got.Endpoint,
				&got.PromptTokens, &got.CompletionTokens, &got.ReasoningTokens)
		if err != nil {
			t.Fatalf("report %s: %v", w.ID, err)
		}
		got.ID, got.AtGiven = w.ID, true
		if got != w.Report {
			t.Errorf("stored %+v\nsent   %+v", got, w.Report)
		}
	}
	sums, err := s.DailyUsage(ctx, spend.DailyScope{UserID: "alice", KeyID: k.ID}, day, day+1)
	if err != nil {
		t.Fatal(err)
	}
	if wantSums := []spend.DaySum{{Day: day, Cost: 162, BYOK: 7}, {Day: day + 1, Cost: 1000}}; !reflect.DeepEqual(sums, wantSums) {
		t.Errorf("daily: %+v, want %+v", sums, wantSums)
	}
}

// testUsageReplayConflict: a replay of a counted id with the same content
// is a duplicate; with any field changed it refuses its whole batch,
// naming the id, and nothing of the batch is counted.
func testUsageReplayConflict(t *testing.T, b backend) {
	s := b.store(t)
	ctx := testContext(t)
	mustUser(t, s, "alice")
	ws := mustWorkspace(t, s, "alice", "team")
	k := mustRoleKey(t, s, "alice", keys.RoleStandard, ws.ID, time.Now())
	other := mustRoleKey(t, s, "alice", keys.RoleStandard, ws.ID, time.Now())
	at := time.Date(2026, 11, 25, 10, 0, 0, 123_456_789, time.UTC)
	first := spend.Report{ID: "r1", KeyID: k.ID, Cost: 100, At: at, AtGiven: true, Model: "openai/gpt-4.1",
		Provider: "OpenAI", Endpoint: "ep-1", PromptTokens: 1, CompletionTokens: 2, ReasoningTokens: 3}
	batchOf := func(rs ...spend.Report) []recorded {
		out := make([]recorded, len(rs))
		for i, r := range rs {
			out[i] = recorded{UserID: "alice", WorkspaceID: ws.ID, Report: r}
		}
		return out
	}
	if n, err := recordUsage(ctx, s, batchOf(first)); err != nil || n != 1 {
		t.Fatalf("first: %d, %v", n, err)
	}
	// The same content, its time written to the nanosecond again, or no
	// time at all (received now): a duplicate.
	untimed := first
	untimed.At, untimed.AtGiven = at.Add(48*time.Hour), false
	for name, r := range map[string]spend.Report{"same": first, "without at": untimed} {
		if n, err := recordUsage(ctx, s, batchOf(r)); err != nil || n != 0 {
			t.Errorf("%s: %d accepted, %v; want a duplicate", name, n, err)
		}
	}
	changes := map[string]func(r *spend.Report){
		"key":               func(r *spend.Report) { r.KeyID = other.ID },
		"cost":              func(r *spend.Report) { r.Cost++ },
		"byok":              func(r *spend.Report) { r.BYOK = true },
		"at":                func(r *spend.Report) { r.At = r.At.Add(time.Microsecond) },
		"model":             func(r *spend.Report) { r.Model = "openai/gpt-4o" },
		"provider_name":     func(r *spend.Report) { r.Provider = "Azure" },
		"endpoint_id":       func(r *spend.Report) { r.Endpoint = "" },
		"prompt_tokens":     func(r *spend.Report) { r.PromptTokens = 0 },
		"completion_tokens": func(r *spend.Report) { r.CompletionTokens++ },
		"reasoning_tokens":  func(r *spend.Report) { r.ReasoningTokens++ },
	}
	for name, change := range changes {
		changed := first
		change(&changed)
		fresh := spend.Report{ID: "new-" + name, KeyID: k.ID, Cost: 5, At: at}
		_, err := recordUsage(ctx, s, batchOf(fresh, changed))
		var rc *spend.ReplayConflictError
		if !errors.As(err, &rc) || rc.ID != "r1" || !errors.Is(err, spend.ErrReplayConflict) {
			t.Errorf("%s changed: %v, want a replay conflict naming r1", name, err)
		}
		if got := count(t, s, `SELECT COUNT(*) FROM usage_reports WHERE id = $1`, fresh.ID); got != 0 {
			t.Errorf("%s changed: the batch's new report was kept", name)
		}
	}
	rows := rollupsOf(t, s, k.ID)
	if len(rows) != 1 || rows[0].Requests != 1 || rows[0].Cost != 100 {
		t.Errorf("rollups after the refused replays: %+v", rows)
	}
}

// testUsageStandingsFeed: the refresh reads every standing once, then only
// the keys and workspaces whose usage, limit or budgets changed since its
// last read, with totals that equal the sums of the rollups; and the
// recording returns the totals it left.
func testUsageStandingsFeed(t *testing.T, b backend) {
	s := b.store(t)
	ctx := testContext(t)
	mustUser(t, s, "alice")
	ws := mustWorkspace(t, s, "alice", "team")
	at := time.Date(2026, 11, 25, 10, 0, 0, 0, time.UTC)
	w := spend.WindowsAt(at)
	limited := mustRoleKey(t, s, "alice", keys.RoleStandard, ws.ID, at)
	free := mustRoleKey(t, s, "alice", keys.RoleStandard, "", at)
	limit := money.Micros(1_000)
	if _, err := s.UpdateKey(ctx, "alice", limited.ID, keys.UpdateRequest{Limit: keys.Optional[*money.Micros]{Set: true, Value: &limit}}, at); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.PutBudget(ctx, spend.Budget{ID: uuid.NewString(), WorkspaceID: ws.ID, Interval: spend.Daily, Limit: 500, CreatedAt: at, UpdatedAt: at},
		nil, func(map[spend.Interval]money.Micros) error { return nil }); err != nil {
		t.Fatal(err)
	}
	all, err := s.StandingsSince(ctx, 0, true)
	if err != nil {
		t.Fatal(err)
	}
	if len(all.Keys) != 1 || all.Keys[0].KeyID != limited.ID || all.Keys[0].Limit != limit ||
		len(all.Workspaces) != 1 || len(all.Workspaces[0].Budgets) != 1 || all.Workspaces[0].WorkspaceID != ws.ID {
		t.Fatalf("all: %+v", all)
	}
	// PostgreSQL's cursor is the oldest transaction running in the whole
	// server (other tests' too): rows may come again, never changed.
	if c, err := s.StandingsSince(ctx, all.Next, false); err != nil || (len(c.Keys)+len(c.Workspaces) != 0 && s.d.name != DriverPostgres) ||
		(len(c.Keys) > 0 && !reflect.DeepEqual(c.Keys, all.Keys)) {
		t.Fatalf("nothing changed: %+v, %v", c, err)
	}

	// Usage of both keys: the limited one and the workspace come with
	// their totals; the free key keeps none (nothing enforces it) and does
	// not come at all.
	n, touched, err := s.RecordUsageTotals(ctx, spend.Batch{UserID: "alice", Workspaces: map[string]string{limited.ID: ws.ID, free.ID: ""},
		Reports: []spend.Report{
			{ID: "a", KeyID: limited.ID, Cost: 300, At: at},
			{ID: "b", KeyID: limited.ID, Cost: 200, BYOK: true, At: at.AddDate(0, 0, -1)},
			{ID: "c", KeyID: free.ID, Cost: 7, At: at},
		}})
	if err != nil || n != 3 {
		t.Fatalf("RecordUsageTotals = %d, %v", n, err)
	}
	want := spend.Usage{Total: 500, Daily: 300, Weekly: 500, Monthly: 500, BYOKTotal: 200, BYOKWeekly: 200, BYOKMonthly: 200}
	if got := touched.Keys[limited.ID].Usage(w); got != want {
		t.Errorf("touched key: %+v, want %+v", got, want)
	}
	if got := touched.Workspaces[ws.ID].Usage(w); got != want {
		t.Errorf("touched workspace: %+v, want %+v", got, want)
	}
	if len(touched.Keys) != 1 || len(touched.Workspaces) != 1 {
		t.Errorf("touched: %+v", touched)
	}
	c, err := s.StandingsSince(ctx, all.Next, false)
	if err != nil {
		t.Fatal(err)
	}
	gotKeys := map[string]spend.KeyChange{}
	for _, k := range c.Keys {
		gotKeys[k.KeyID] = k
	}
	if k := gotKeys[limited.ID]; k.Gone || k.Limit != limit || k.Totals.Usage(w) != want {
		t.Errorf("changed limited key: %+v", k)
	}
	if k, ok := gotKeys[free.ID]; ok {
		t.Errorf("changed free key: %+v", k)
	}
	if len(c.Workspaces) != 1 || c.Workspaces[0].Totals.Usage(w) != want || len(c.Workspaces[0].Budgets) != 1 {
		t.Errorf("changed workspaces: %+v", c.Workspaces)
	}
	// KeyUsage reads the same totals, and sums the free key's rollups.
	if u, err := s.KeyUsage(ctx, []string{limited.ID, free.ID}, w); err != nil || u[limited.ID] != want ||
		u[free.ID] != (spend.Usage{Total: 7, Daily: 7, Weekly: 7, Monthly: 7}) {
		t.Errorf("KeyUsage = %+v, %v", u, err)
	}

	// A limit set on the free key makes its totals from its rollups.
	if _, err := s.UpdateKey(ctx, "alice", free.ID, keys.UpdateRequest{Limit: keys.Optional[*money.Micros]{Set: true, Value: &limit}}, at); err != nil {
		t.Fatal(err)
	}
	if made, err := s.StandingsSince(ctx, c.Next, false); err != nil || keyChange(made, free.ID) == nil ||
		keyChange(made, free.ID).Totals.Usage(w) != (spend.Usage{Total: 7, Daily: 7, Weekly: 7, Monthly: 7}) {
		t.Errorf("the free key's totals made with its limit: %+v, %v", made, err)
	}

	// A limit removed, a budget deleted: each comes once more, as gone.
	next := c.Next
	if _, err := s.UpdateKey(ctx, "alice", limited.ID, keys.UpdateRequest{Limit: keys.Optional[*money.Micros]{Set: true}}, at); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteBudget(ctx, ws.ID, spend.Daily); err != nil {
		t.Fatal(err)
	}
	c, err = s.StandingsSince(ctx, next, false)
	if err != nil {
		t.Fatal(err)
	}
	if k := keyChange(c, limited.ID); k == nil || !k.Gone || len(c.Workspaces) != 1 || len(c.Workspaces[0].Budgets) != 0 {
		t.Errorf("after the limit and budget went: %+v", c)
	}
	// A deleted key comes as gone too.
	if _, err := s.UpdateKey(ctx, "alice", limited.ID, keys.UpdateRequest{Limit: keys.Optional[*money.Micros]{Set: true, Value: &limit}}, at); err != nil {
		t.Fatal(err)
	}
	next = c.Next
	if err := s.DeleteKey(ctx, "alice", limited.ID, at); err != nil {
		t.Fatal(err)
	}
	if c, err = s.StandingsSince(ctx, next, false); err != nil || keyChange(c, limited.ID) == nil || !keyChange(c, limited.ID).Gone {
		t.Errorf("after the key's delete: %+v, %v", c, err)
	}
}

func keyChange(c spend.Changes, id string) *spend.KeyChange {
	for i := range c.Keys {
		if c.Keys[i].KeyID == id {
			return &c.Keys[i]
		}
	}
	return nil
}

// testUsageUpgrade: a database of the days before rollups and totals
// (usage_days alone) keeps what it counted: the rollups are rebuilt from
// its reports and the totals from the rollups, and a limit set before the
// upgrade stands with its usage.
func testUsageUpgrade(t *testing.T, b backend) {
	dsn := b.fresh(t)
	s := b.open(t, dsn)
	ctx := testContext(t)
	mustUser(t, s, "alice")
	ws := mustWorkspace(t, s, "alice", "team")
	k := mustRoleKey(t, s, "alice", keys.RoleStandard, ws.ID, time.Now())
	limit := money.Micros(1_000_000)
	if _, err := s.UpdateKey(ctx, "alice", k.ID, keys.UpdateRequest{Limit: keys.Optional[*money.Micros]{Set: true, Value: &limit}}, time.Now()); err != nil {
		t.Fatal(err)
	}
	now := time.Now().UTC()
	old := []string{
		`DROP TABLE usage_totals`, `DROP TABLE usage_rollups`, `DROP TABLE audit_log`,
		`CREATE TABLE usage_days (key_id TEXT NOT NULL, day BIGINT NOT NULL, workspace_id TEXT, cost BIGINT NOT NULL,
			byok_cost BIGINT NOT NULL, PRIMARY KEY (key_id, day))`,
		`DELETE FROM schema_migrations WHERE version >= 12`,
	}
	if s.d.name == DriverSQLite {
		for _, c := range []string{"model", "provider_name", "endpoint_id", "prompt_tokens", "completion_tokens", "reasoning_tokens"} {
			old = append(old, `ALTER TABLE usage_reports DROP COLUMN `+c)
		}

		var drops []string
		for _, tr := range []string{"key_created", "key_limit", "key_deleted", "budget_set", "budget_changed", "budget_deleted", "workspace_byok"} {
			drops = append(drops, `DROP TRIGGER usage_totals_`+tr)
		}
		old = append(drops, old...)
	}
	if s.d.name == DriverPostgres {
		old = append(old, `DROP FUNCTION usage_totals_key_changed CASCADE`, `DROP FUNCTION usage_totals_budget_changed CASCADE`,
			`DROP FUNCTION usage_totals_workspace_changed CASCADE`, `DROP FUNCTION usage_totals_mark`,
			`DROP TABLE usage_changes`,
			// The unpartitioned table of 0009, keyed by user and id, that
			// 0018 partitions.
			`DROP TABLE usage_reports`, `DROP TABLE usage_report_ids`, `DROP FUNCTION usage_report_digest`,
			`CREATE TABLE usage_reports (user_id TEXT NOT NULL, id TEXT NOT NULL, key_id TEXT NOT NULL, workspace_id UUID,
				cost BIGINT NOT NULL, byok BOOLEAN NOT NULL, at TIMESTAMPTZ NOT NULL, received_at TIMESTAMPTZ NOT NULL,
				PRIMARY KEY (user_id, id), CHECK (cost >= 0))`)
	}
	for _, q := range old {
		if _, err := s.w.ExecContext(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	for i, r := range []struct {
		cost money.Micros
		byok bool
		at   time.Time
	}{{300_000, false, now}, {200_000, true, now}, {500_000, false, now.AddDate(0, 0, -40)}} {
		if _, err := s.w.ExecContext(ctx, `INSERT INTO usage_reports (user_id, id, key_id, workspace_id, cost, byok, at, received_at)
			VALUES ('alice', $1, $2, $3, $4, $5, $6, $6)`, fmt.Sprintf("r%d", i), k.ID, ws.ID, int64(r.cost), r.byok, s.d.ts(micro(r.at))); err != nil {
			t.Fatal(err)
		}
	}
	s2 := b.open(t, dsn)
	w := spend.WindowsAt(now)
	u, err := s2.KeyUsage(ctx, []string{k.ID}, w)
	if err != nil || u[k.ID].Total != 1_000_000 || u[k.ID].Daily != 500_000 || u[k.ID].BYOKDaily != 200_000 {
		t.Fatalf("usage after the upgrade: %+v, %v", u[k.ID], err)
	}
	rows := rollupsOf(t, s2, k.ID)
	if len(rows) != 3 || rows[0].Cost != 500_000 || rows[0].Requests != 1 {
		t.Errorf("rollups after the upgrade: %+v", rows)
	}
	ks, _, err := s2.Standings(ctx, w)
	if err != nil || len(ks) != 1 || ks[0].Usage.Total != 1_000_000 || ks[0].Limit != limit {
		t.Errorf("standings after the upgrade: %+v, %v", ks, err)
	}
	// A report recorded before the upgrade, sent again: counted once, and
	// refused when its content changed.
	replay := func(cost money.Micros) (int, error) {
		return s2.RecordUsage(ctx, spend.Batch{UserID: "alice", Workspaces: map[string]string{k.ID: ws.ID},
			Reports: []spend.Report{{ID: "r0", KeyID: k.ID, Cost: cost, At: now, AtGiven: true}}})
	}
	if n, err := replay(300_000); err != nil || n != 0 {
		t.Errorf("the same report again: %d accepted, %v; want 0", n, err)
	}
	var conflict *spend.ReplayConflictError
	if n, err := replay(300_001); !errors.As(err, &conflict) || conflict.ID != "r0" || n != 0 {
		t.Errorf("the report changed: %d accepted, %v; want a ReplayConflictError", n, err)
	}
	if u, err := s2.KeyUsage(ctx, []string{k.ID}, w); err != nil || u[k.ID].Total != 1_000_000 {
		t.Errorf("usage after the replays: %+v, %v", u[k.ID], err)
	}
}

// testUsageActivity: what a user's keys spent on, per day, model, endpoint
// and provider (and workspace), of one key, one workspace or all the
// user's keys, within the days asked for.
func testUsageActivity(t *testing.T, b backend) {
	s := b.store(t)
	ctx := testContext(t)
	mustUser(t, s, "alice")
	mustUser(t, s, "bob")
	team := mustWorkspace(t, s, "alice", "team")
	lab := mustWorkspace(t, s, "alice", "lab")
	at := time.Date(2026, 11, 25, 10, 0, 0, 0, time.UTC)
	day := spend.Day(at)
	k1 := mustRoleKey(t, s, "alice", keys.RoleStandard, team.ID, at)
	k2 := mustRoleKey(t, s, "alice", keys.RoleStandard, lab.ID, at)
	kb := mustRoleKey(t, s, "bob", keys.RoleStandard, "", at)
	n := 0
	report := func(user string, k keys.APIKey, model string, cost int64, byok bool, when time.Time) recorded {
		n++
		return recorded{UserID: user, WorkspaceID: k.WorkspaceID, Report: spend.Report{ID: fmt.Sprintf("r%d", n), KeyID: k.ID,
			Cost: money.Micros(cost), BYOK: byok, At: when, Model: model, Provider: "P", Endpoint: "e",
			PromptTokens: 1, CompletionTokens: 2, ReasoningTokens: 3}}
	}
	if _, err := recordUsage(ctx, s, []recorded{
		report("alice", k1, "a/m", 100, false, at),
		report("alice", k1, "a/m", 50, true, at),
		report("alice", k2, "a/m", 10, false, at),
		report("alice", k2, "b/n", 7, false, at.AddDate(0, 0, -1)),
		report("alice", k1, "a/m", 9, false, at.AddDate(0, 0, -3)), // before the days asked for
		report("bob", kb, "a/m", 1000, false, at),
	}); err != nil {
		t.Fatal(err)
	}
	row := func(d int64, model, ws string, cost, byok, requests int64) spend.ActivityRow {
		return spend.ActivityRow{Day: d, Model: model, Endpoint: "e", Provider: "P", WorkspaceID: ws, Cost: money.Micros(cost),
			BYOK: money.Micros(byok), Requests: requests, PromptTokens: requests, CompletionTokens: 2 * requests, ReasoningTokens: 3 * requests}
	}
	cases := []struct {
		name  string
		scope spend.DailyScope
		byWS  bool
		want  []spend.ActivityRow
	}{
		{"user", spend.DailyScope{UserID: "alice"}, false, []spend.ActivityRow{row(day, "a/m", "", 160, 50, 3), row(day-1, "b/n", "", 7, 0, 1)}},
		{"user per workspace", spend.DailyScope{UserID: "alice"}, true,
			[]spend.ActivityRow{row(day, "a/m", team.ID, 150, 50, 2), row(day, "a/m", lab.ID, 10, 0, 1), row(day-1, "b/n", lab.ID, 7, 0, 1)}},
		{"key", spend.DailyScope{UserID: "alice", KeyID: k2.ID}, false, []spend.ActivityRow{row(day, "a/m", "", 10, 0, 1), row(day-1, "b/n", "", 7, 0, 1)}},
		{"workspace", spend.DailyScope{UserID: "alice", WorkspaceID: team.ID}, false, []spend.ActivityRow{row(day, "a/m", "", 150, 50, 2)}},
		{"other user", spend.DailyScope{UserID: "bob"}, false, []spend.ActivityRow{row(day, "a/m", "", 1000, 0, 1)}},
	}
	for _, c := range cases {
		got, err := s.Activity(ctx, c.scope, day-2, day, c.byWS)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		slices.SortFunc(got, func(a, b spend.ActivityRow) int {
			return cmp.Or(cmp.Compare(b.Day, a.Day), cmp.Compare(b.Cost, a.Cost))
		})
		if !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s:\n%+v\nwant\n%+v", c.name, got, c.want)
		}
	}
}

// testUsageRetention: raw reports are deleted once past their retention,
// a bounded number a transaction, the rollups and totals staying whole;
// the replay of a deleted report is refused by its at, never counted
// twice.
func testUsageRetention(t *testing.T, b backend) {
	s := b.store(t)
	ctx := testContext(t)
	clock := useClock(s)
	mustUser(t, s, "alice")
	k := mustRoleKey(t, s, "alice", keys.RoleStandard, "", time.Now())
	now := time.Now().UTC()
	old := now.Add(-spend.RawRetention - time.Hour)
	clock.advance(old.Sub(clock.now()))
	var first []spend.Report
	for i := range 3 {
		first = append(first, spend.Report{ID: fmt.Sprintf("old-%d", i), KeyID: k.ID, Cost: 100, At: old, AtGiven: true})
	}
	if _, err := s.RecordUsage(ctx, spend.Batch{UserID: "alice", Reports: first, Workspaces: map[string]string{k.ID: ""}}); err != nil {
		t.Fatal(err)
	}
	clock.advance(now.Sub(clock.now()))
	if _, err := s.RecordUsage(ctx, spend.Batch{UserID: "alice", Reports: []spend.Report{{ID: "new", KeyID: k.ID, Cost: 1, At: now}},
		Workspaces: map[string]string{k.ID: ""}}); err != nil {
		t.Fatal(err)
	}
	cutoff := now.Add(-spend.RawRetention)
	if n, err := s.PruneReports(ctx, cutoff, 2); err != nil || n != 2 {
		t.Fatalf("first batch: %d, %v; want 2 (the limit)", n, err)
	}
	if n, err := s.PruneReports(ctx, cutoff, 2); err != nil || n != 1 {
		t.Fatalf("second batch: %d, %v; want the last old one", n, err)
	}
	if n, err := s.PruneReports(ctx, cutoff, 2); err != nil || n != 0 {
		t.Fatalf("nothing left: %d, %v", n, err)
	}
	if got := count(t, s, `SELECT COUNT(*) FROM usage_reports`); got != 1 {
		t.Errorf("%d raw reports left, want the new one", got)
	}
	usage := func() spend.Usage {
		u, err := s.KeyUsage(ctx, []string{k.ID}, spend.WindowsAt(now))
		if err != nil {
			t.Fatal(err)
		}
		return u[k.ID]
	}
	if u := usage(); u.Total != 301 {
		t.Errorf("usage after the prune: %+v, want all of it", u)
	}
	// The old report sent again, through the rules of the edge: refused by
	// its time, and nothing counted.
	svc := spend.NewService(s, nil, nil)
	_, err := svc.ReportBatch(ctx, &keys.APIKey{UserID: "alice", Role: keys.RoleService}, func(f *spend.BatchForm) {
		r := f.Next()
		r.ID(first[0].ID)
		r.Key(k.ID)
		r.Cost(first[0].Cost)
		r.At(first[0].At)
	})
	if fields := invalid.Fields(err); len(fields) != 1 || fields[0].Name != "reports[0].at" {
		t.Errorf("the replay of a pruned report: %v, want refused by reports[0].at", err)
	}
	if u := usage(); u.Total != 301 {
		t.Errorf("usage after the replay: %+v", u)
	}
	rows := rollupsOf(t, s, k.ID)
	if len(rows) != 2 || rows[0].Requests != 3 || rows[0].Cost != 300 {
		t.Errorf("rollups after the prune: %+v", rows)
	}
}

// testUsageTotalsMadeDuringIngest: a limit set on a key while batches of
// its reports are being recorded makes totals that count every batch, the
// ones in flight included (on PostgreSQL a recording that found no totals
// and a making that did not see its rollups would lose it for good).
func testUsageTotalsMadeDuringIngest(t *testing.T, b backend) {
	s := b.store(t)
	ctx := testContext(t)
	mustUser(t, s, "alice")
	ws := mustWorkspace(t, s, "alice", "team")
	k := mustRoleKey(t, s, "alice", keys.RoleStandard, ws.ID, time.Now())
	now := time.Now().UTC()
	const writers, batches = 4, 15
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := range batches {
				rs := make([]spend.Report, 50)
				for i := range rs {
					rs[i] = spend.Report{ID: fmt.Sprintf("w%d-%d-%d", w, n, i), KeyID: k.ID, Cost: 1, At: now}
				}
				if _, err := s.RecordUsage(ctx, spend.Batch{UserID: "alice", Reports: rs, Workspaces: map[string]string{k.ID: ws.ID}}); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	// The limit is set once some batches are in.
	deadline := time.Now().Add(30 * time.Second)
	for count(t, s, `SELECT COUNT(*) FROM usage_reports WHERE key_id = $1`, k.ID) < 200 {
		if time.Now().After(deadline) {
			t.Fatal("the first batches never arrived")
		}
		runtime.Gosched()
	}
	limit := money.Micros(1_000_000)
	if _, err := s.UpdateKey(ctx, "alice", k.ID, keys.UpdateRequest{Limit: keys.Optional[*money.Micros]{Set: true, Value: &limit}}, time.Now()); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	c, err := s.StandingsSince(ctx, 0, true)
	if err != nil {
		t.Fatal(err)
	}
	total := money.Micros(writers * batches * 50)
	if kc := keyChange(c, k.ID); kc == nil || kc.Totals.Total != total || kc.Totals.Usage(spend.WindowsAt(now)).Daily != total {
		t.Errorf("the key's totals after its limit was set during the ingest: %+v, want %v in all", kc, total)
	}
}

// testUsagePartitions: on PostgreSQL the pruning creates the day
// partitions ahead, a report of a day without one waits in the DEFAULT
// partition until its day's is created, and a day wholly past the
// retention is dropped with its ids, its rollups kept.
func testUsagePartitions(t *testing.T, b backend) {
	s := b.store(t)
	if s.d.name != DriverPostgres {
		t.Skip("SQLite keeps one table of raw reports")
	}
	ctx := testContext(t)
	clock := useClock(s)
	start := clock.now()
	mustUser(t, s, "alice")
	k := mustRoleKey(t, s, "alice", keys.RoleStandard, "", start)
	never := start.AddDate(-1, 0, 0)
	partitionOf := func(id string) string {
		t.Helper()
		var name string
		rawQuery(t, s.r, &name, `SELECT CAST(tableoid::regclass AS TEXT) FROM usage_reports WHERE id = $1`, id)
		return name
	}
	exists := func(name string) bool {
		t.Helper()
		var got bool
		rawQuery(t, s.r, &got, `SELECT to_regclass($1) IS NOT NULL`, name)
		return got
	}
	record := func(id string) {
		t.Helper()
		if n, err := s.RecordUsage(ctx, spend.Batch{UserID: "alice", Workspaces: map[string]string{k.ID: ""},
			Reports: []spend.Report{{ID: id, KeyID: k.ID, Cost: 10, At: clock.now(), AtGiven: true}}}); err != nil || n != 1 {
			t.Fatalf("RecordUsage(%s) = %d, %v", id, n, err)
		}
	}
	if n, err := s.PruneReports(ctx, never, 10); err != nil || n != 0 {
		t.Fatalf("PruneReports = %d, %v", n, err)
	}
	for i := range partitionsAhead + 1 {
		if name := partitionPrefix + start.AddDate(0, 0, i).Format(partitionLayout); !exists(name) {
			t.Errorf("%s not created", name)
		}
	}
	record("today")
	if got, want := partitionOf("today"), partitionPrefix+start.Format(partitionLayout); got != want {
		t.Errorf("today's report in %s, want %s", got, want)
	}
	early := start.AddDate(0, 0, -8)
	clock.advance(early.Sub(clock.now()))
	record("early")
	if got := partitionOf("early"); got != "usage_reports_default" {
		t.Errorf("a report of a day without its partition in %s, want usage_reports_default", got)
	}
	if n, err := s.PruneReports(ctx, never, 10); err != nil || n != 0 {
		t.Fatalf("PruneReports = %d, %v", n, err)
	}
	if got, want := partitionOf("early"), partitionPrefix+early.Format(partitionLayout); got != want {
		t.Errorf("after its partition was made the report is in %s, want %s", got, want)
	}
	clock.advance(start.AddDate(0, 0, 40).Sub(clock.now()))
	cutoff := clock.now().Add(-spend.RawRetention)
	if n, err := s.PruneReports(ctx, cutoff, 10); err != nil || n != 2 {
		t.Fatalf("PruneReports past both days = %d, %v; want their 2 ids", n, err)
	}
	for _, d := range []time.Time{early, start} {
		if name := partitionPrefix + d.Format(partitionLayout); exists(name) {
			t.Errorf("%s not dropped", name)
		}
	}
	if n := count(t, s, `SELECT COUNT(*) FROM usage_reports`) + count(t, s, `SELECT COUNT(*) FROM usage_report_ids`); n != 0 {
		t.Errorf("%d raw rows and ids left", n)
	}
	if u, err := s.KeyUsage(ctx, []string{k.ID}, spend.WindowsAt(clock.now())); err != nil || u[k.ID].Total != 20 {
		t.Errorf("usage after the drop: %+v, %v; want both reports", u[k.ID], err)
	}
}

// testUsageDigest: the digest a recording makes of a report in Go is the
// one migration 0018 made in the database of the reports stored before
// it, or a replay of one of those would be refused as changed.
func testUsageDigest(t *testing.T, b backend) {
	s := b.store(t)
	if s.d.name != DriverPostgres {
		t.Skip("SQLite compares replays with their raw rows")
	}
	for _, r := range []spend.Report{
		{KeyID: "00000000000000aa", Cost: 1},
		{KeyID: "00000000000000aa", Cost: 123_456, BYOK: true, Model: "openai/gpt-4.1", Provider: "OpenAI", Endpoint: "ep-1",
			PromptTokens: 10, CompletionTokens: 20, ReasoningTokens: 30},
		{KeyID: "k,1", Cost: 0, Model: "a/b,c", Provider: "", Endpoint: "é,ü", PromptTokens: 1 << 40},
		{KeyID: "k", Cost: 1, Model: "", Provider: "a/b,c"},
	} {
		d := appendDigest(nil, &r)
		var same bool
		rawQuery(t, s.r, &same, `SELECT usage_report_digest($1, $2, $3, $4, $5, $6, $7, $8, $9) = CAST($10 AS UUID)`,
			r.KeyID, int64(r.Cost), r.BYOK, r.Model, r.Provider, r.Endpoint, r.PromptTokens, r.CompletionTokens,
			r.ReasoningTokens, string(d[1:len(d)-1]))
		if !same {
			t.Errorf("the digest of %+v differs between Go and the database", r)
		}
	}
}
