package sqlstore

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/aigateway/gateway/policy/spend"
)

// Sizes of BenchmarkStandingsRefresh: the deployment at scale.
const (
	benchLimitedKeys   = 100_000
	benchBudgetedSpace = 10_000
	benchChangedKeys   = 1_000 // keys reported between two refreshes: a batch of 1,000 reports
)

// BenchmarkStandingsRefresh: what one replica's spend refresh costs with
// 100,000 limited keys and 10,000 budgeted workspaces, with one day and
// with a year of daily rollups behind them (one model a key a day: 36.5
// million rows for the year). Each op is one Enforcer.Refresh after a
// batch of 1,000 reports on 1,000 keys was recorded; full-ms is the first
// refresh, which reads every standing. The year's rollups take minutes to
// seed: the days=365 runs are skipped with -short.
func BenchmarkStandingsRefresh(b *testing.B) {
	for _, be := range []struct {
		name string
		get  func(testing.TB) backend
	}{{"sqlite", func(testing.TB) backend { return sqliteBackend() }}, {"postgres", postgresBackend}} {
		for _, days := range []int{1, 365} {
			b.Run(fmt.Sprintf("%s/days=%d", be.name, days), func(b *testing.B) {
				if days > 1 && testing.Short() {
					b.Skip("a year of rollups takes minutes to seed")
				}
				s := be.get(b).store(b)
				ctx := context.Background()
				now := time.Now().UTC()
				seedStart := time.Now()
				if err := seedStandings(ctx, s, days, now); err != nil {
					b.Fatal(err)
				}
				seeded := time.Since(seedStart)
				e := &spend.Enforcer{Store: s}
				start := time.Now()
				if err := e.Refresh(ctx); err != nil {
					b.Fatal(err)
				}
				full := time.Since(start)
				batch := 0
				b.ResetTimer()
				for b.Loop() {
					b.StopTimer()
					if err := recordSpread(ctx, s, batch, now); err != nil {
						b.Fatal(err)
					}
					batch++
					b.StartTimer()
					if err := e.Refresh(ctx); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(full.Microseconds())/1000, "full-ms")
				b.ReportMetric(seeded.Seconds(), "seed-s")
			})
		}
	}
}

// recordSpread records one report on each of benchChangedKeys keys, a
// different slice of them each batch.
func recordSpread(ctx context.Context, s *Store, batch int, now time.Time) error {
	rs := make([]spend.Report, benchChangedKeys)
	ws := make(map[string]string, benchChangedKeys)
	for i := range rs {
		k := (batch*benchChangedKeys + i) % benchLimitedKeys
		id := fmt.Sprintf("%016x", k)
		rs[i] = spend.Report{ID: fmt.Sprintf("b%d-%d", batch, i), KeyID: id, Cost: 1, At: now}
		ws[id] = seededWorkspace(k % benchBudgetedSpace)
	}
	_, err := s.RecordUsage(ctx, spend.Batch{UserID: "bench", Reports: rs, Workspaces: ws})
	return err
}

func seededWorkspace(i int) string { return fmt.Sprintf("%08x-0000-4000-8000-%012x", i, i) }

// seedStandings writes, in bulk SQL, the user bench with benchBudgetedSpace
// workspaces (a monthly budget each) and benchLimitedKeys keys (a daily
// limit each, key i in workspace i mod benchBudgetedSpace), days of
// rollups of every key ending today, and their totals.
func seedStandings(ctx context.Context, s *Store, days int, now time.Time) error {
	today := spend.Day(now)
	w := spend.WindowsAt(now)
	ts := s.d.ts(micro(now))
	var stmts []string
	if s.d.name == DriverPostgres {
		stmts = []string{
			`INSERT INTO users (id, created_at) VALUES ('bench', $1)`,
			fmt.Sprintf(`INSERT INTO workspaces (id, name, slug, description, default_guardrail_id, created_by, created_at,
				include_byok_in_budgets, io_logging_sampling_rate, is_data_discount_logging_enabled,
				is_observability_broadcast_enabled, is_observability_io_logging_enabled)
				SELECT CAST(lpad(to_hex(i), 8, '0') || '-0000-4000-8000-' || lpad(to_hex(i), 12, '0') AS UUID), 'w', 'w' || i, '',
					'g', 'bench', $1, false, 1, true, false, false FROM generate_series(0, %d) AS i`, benchBudgetedSpace-1),
			`INSERT INTO workspace_budgets (workspace_id, reset_interval, id, limit_micros, created_at, updated_at)
				SELECT id, 'monthly', id, 1000000000, $1, $1 FROM workspaces WHERE created_by = 'bench'`,
			fmt.Sprintf(`INSERT INTO api_keys (id, user_id, name, role, workspace_id, hash, created_at, limit_usd, limit_reset)
				SELECT lpad(to_hex(i), 16, '0'), 'bench', 'k', 'standard',
					CAST(lpad(to_hex(i %% %d), 8, '0') || '-0000-4000-8000-' || lpad(to_hex(i %% %d), 12, '0') AS UUID),
					decode(md5(i::text) || md5(i::text), 'hex'), $1, 1000, 'daily' FROM generate_series(0, %d) AS i`,
				benchBudgetedSpace, benchBudgetedSpace, benchLimitedKeys-1),
			fmt.Sprintf(`INSERT INTO usage_rollups (key_id, day, model, provider_name, endpoint_id, byok, workspace_id,
					requests, cost, prompt_tokens, completion_tokens, reasoning_tokens)
				SELECT k.id, d, 'openai/gpt-4.1', 'OpenAI', 'ep', false, k.workspace_id, 10, 1000, 100, 100, 0
				FROM api_keys k CROSS JOIN generate_series(%d, %d) AS d WHERE k.user_id = 'bench'`, today-int64(days)+1, today),
		}
	} else {
		stmts = []string{
			`INSERT INTO users (id, created_at) VALUES ('bench', $1)`,
			fmt.Sprintf(`WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i < %d)
				INSERT INTO workspaces (id, name, slug, description, default_guardrail_id, created_by, created_at,
				include_byok_in_budgets, io_logging_sampling_rate, is_data_discount_logging_enabled,
				is_observability_broadcast_enabled, is_observability_io_logging_enabled)
				SELECT printf('%%08x-0000-4000-8000-%%012x', i, i), 'w', 'w' || i, '', 'g', 'bench', $1, 0, 1, 1, 0, 0 FROM n`,
				benchBudgetedSpace-1),
			`INSERT INTO workspace_budgets (workspace_id, reset_interval, id, limit_micros, created_at, updated_at)
				SELECT id, 'monthly', id, 1000000000, $1, $1 FROM workspaces WHERE created_by = 'bench'`,
			fmt.Sprintf(`WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i < %d)
				INSERT INTO api_keys (id, user_id, name, role, workspace_id, hash, created_at, limit_usd, limit_reset)
				SELECT printf('%%016x', i), 'bench', 'k', 'standard',
					printf('%%08x-0000-4000-8000-%%012x', i %% %d, i %% %d), randomblob(32), $1, '1000', 'daily' FROM n`,
				benchLimitedKeys-1, benchBudgetedSpace, benchBudgetedSpace),
			fmt.Sprintf(`WITH RECURSIVE d(day) AS (SELECT %d UNION ALL SELECT day + 1 FROM d WHERE day < %d)
				INSERT INTO usage_rollups (key_id, day, model, provider_name, endpoint_id, byok, workspace_id,
					requests, cost, prompt_tokens, completion_tokens, reasoning_tokens)
				SELECT k.id, d.day, 'openai/gpt-4.1', 'OpenAI', 'ep', 0, k.workspace_id, 10, 1000, 100, 100, 0
				FROM api_keys k CROSS JOIN d WHERE k.user_id = 'bench' ORDER BY k.id, d.day`, today-int64(days)+1, today),
		}
	}
	// The totals the rollups add up to: the same amount each day.
	daysIn := func(first int64) int64 { return today - max(first, today-int64(days)+1) + 1 }
	keyDay, wsDay := int64(1000), int64(1000*benchLimitedKeys/benchBudgetedSpace)
	for _, sc := range []struct {
		kind  string
		daily int64
	}{{"key", keyDay}, {"workspace", wsDay}} {
		stmts = append(stmts, fmt.Sprintf(`UPDATE usage_totals SET total = %d, d_start = %d, d_cost = %d,
			w_start = %d, w_cost = %d, m_start = %d, m_cost = %d WHERE kind = '%s'`,
			sc.daily*int64(days), w.Daily, sc.daily, w.Weekly, sc.daily*daysIn(w.Weekly), w.Monthly, sc.daily*daysIn(w.Monthly), sc.kind))
	}
	for _, q := range stmts {
		var err error
		if strings.Contains(q, "$1") {
			_, err = s.w.ExecContext(ctx, q, ts)
		} else {
			_, err = s.w.ExecContext(ctx, q)
		}
		if err != nil {
			return fmt.Errorf("%.60s...: %w", q, err)
		}
	}
	_, err := s.w.ExecContext(ctx, `ANALYZE`)
	return err
}

// BenchmarkRecordUsage: one batch of 1,000 reports of one key (in a
// workspace), as a component sends them, on SQLite and PostgreSQL, without
// and with what was served; ns/op is a batch.
func BenchmarkRecordUsage(b *testing.B) {
	for _, be := range []struct {
		name string
		get  func(testing.TB) backend
	}{{"sqlite", func(testing.TB) backend { return sqliteBackend() }}, {"postgres", postgresBackend}} {
		for _, served := range []bool{false, true} {
			b.Run(fmt.Sprintf("%s/served=%v", be.name, served), func(b *testing.B) { benchmarkRecordUsage(b, be.get(b), served) })
		}
	}
}

// BenchmarkPruneDay: the pruning of a day of 50,000 raw reports of one key
// on PostgreSQL, once the whole day is past the retention, in passes of
// 1,000 as spend.Retention makes them; ns/op is the day.
func BenchmarkPruneDay(b *testing.B) {
	s := postgresBackend(b).store(b)
	ctx := context.Background()
	clock := useClock(s)
	if err := s.EnsureUser(ctx, "alice"); err != nil {
		b.Fatal(err)
	}
	const perDay, batch = 50_000, 1000
	rs := make([]spend.Report, batch)
	day := 0
	for b.Loop() {
		b.StopTimer()
		day++
		clock.advance(24 * time.Hour)
		// The day's partition, on PostgreSQL from 0018, is made before
		// the day begins.
		if _, err := s.PruneReports(ctx, clock.now().AddDate(-1, 0, 0), batch); err != nil {
			b.Fatal(err)
		}
		for n := 0; n < perDay; n += batch {
			for i := range rs {
				rs[i] = spend.Report{ID: fmt.Sprintf("r%d-%d", day, n+i), KeyID: "00000000000000aa", Cost: 1, At: clock.now(), AtGiven: true}
			}
			if _, err := s.RecordUsage(ctx, spend.Batch{UserID: "alice", Reports: rs, Workspaces: map[string]string{"00000000000000aa": ""}}); err != nil {
				b.Fatal(err)
			}
		}
		clock.advance(spend.RawRetention + 25*time.Hour)
		cutoff := clock.now().Add(-spend.RawRetention)
		b.StartTimer()
		deleted := 0
		for {
			n, err := s.PruneReports(ctx, cutoff, batch)
			if err != nil {
				b.Fatal(err)
			}
			deleted += n
			if n < batch {
				break
			}
		}
		if deleted != perDay {
			b.Fatalf("%d reports pruned, want %d", deleted, perDay)
		}
	}
}

func benchmarkRecordUsage(b *testing.B, be backend, served bool) {
	s := be.store(b)
	ctx := context.Background()
	if err := s.EnsureUser(ctx, "alice"); err != nil {
		b.Fatal(err)
	}
	ws := newWorkspace("alice", "team")
	if _, err := s.CreateWorkspace(ctx, ws, nil); err != nil {
		b.Fatal(err)
	}
	now := time.Now().UTC()
	rs := make([]spend.Report, 1000)
	batch := 0
	b.ReportAllocs()
	for b.Loop() {
		for i := range rs {
			rs[i] = spend.Report{ID: fmt.Sprintf("r%d-%d", batch, i), KeyID: "00000000000000aa", Cost: 1, At: now}
			if served {
				rs[i].Model, rs[i].Provider, rs[i].Endpoint, rs[i].PromptTokens, rs[i].CompletionTokens = "openai/gpt-4.1", "OpenAI", "ep-1", 100, 200
			}
		}
		batch++
		if _, err := s.RecordUsage(ctx, spend.Batch{UserID: "alice", Reports: rs, Workspaces: map[string]string{"00000000000000aa": ws.ID}}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkRecordUsageKeys: one batch of 1,000 reports spread over 1,000
// keys of one workspace, as a fleet's reporter sends them
// (bench/ingestkeys.sh's load without HTTP), on both stores; ns/op is a
// batch, reports/s the rate it sustains. The keys take turns in the same
// order each batch, so every batch updates 1,000 rollups and running
// totals that exist, as a day's ingest does after its first second.
func BenchmarkRecordUsageKeys(b *testing.B) {
	for _, be := range []struct {
		name string
		get  func(testing.TB) backend
	}{{"sqlite", func(testing.TB) backend { return sqliteBackend() }}, {"postgres", postgresBackend}} {
		b.Run(be.name, func(b *testing.B) {
			s := be.get(b).store(b)
			ctx := context.Background()
			if err := s.EnsureUser(ctx, "alice"); err != nil {
				b.Fatal(err)
			}
			ws := newWorkspace("alice", "fleet")
			if _, err := s.CreateWorkspace(ctx, ws, nil); err != nil {
				b.Fatal(err)
			}
			const keys = 1000
			of := make(map[string]string, keys)
			ids := make([]string, keys)
			for i := range ids {
				ids[i] = fmt.Sprintf("%016x", i)
				of[ids[i]] = ws.ID
			}
			now := time.Now().UTC()
			rs := make([]spend.Report, 1000)
			batch := 0
			b.ReportAllocs()
			for b.Loop() {
				b.StopTimer()
				for i := range rs {
					rs[i] = spend.Report{ID: fmt.Sprintf("r%d-%d", batch, i), KeyID: ids[i%keys], Cost: 1, At: now}
				}
				batch++
				b.StartTimer()
				if _, err := s.RecordUsage(ctx, spend.Batch{UserID: "alice", Reports: rs, Workspaces: of}); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(len(rs))*float64(b.N)/b.Elapsed().Seconds(), "reports/s")
		})
	}
}
