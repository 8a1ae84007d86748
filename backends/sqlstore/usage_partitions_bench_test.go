package sqlstore

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/aigateway/gateway/policy/spend"
)

// BenchmarkDropDay: the drop of a day's partition of 50,000 raw reports
// past the retention alone (keepPartitions), to set against
// BenchmarkPruneDay, which also deletes the day's ids, and against the row
// deletes of before 0018; ns/op is the day.
func BenchmarkDropDay(b *testing.B) {
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
		if err := s.keepPartitions(ctx, clock.now().AddDate(-1, 0, 0)); err != nil {
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
		// The days ahead made first, so that only the drop is timed.
		if err := s.keepPartitions(ctx, clock.now().AddDate(-1, 0, 0)); err != nil {
			b.Fatal(err)
		}
		cutoff := clock.now().Add(-spend.RawRetention)
		b.StartTimer()
		if err := s.keepPartitions(ctx, cutoff); err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		var n int
		if rawQuery(b, s.r, &n, `SELECT COUNT(*) FROM usage_reports WHERE received_at < $1`, cutoff); n != 0 {
			b.Fatalf("%d raw reports left before the cutoff", n)
		}
		if _, err := s.w.ExecContext(ctx, `DELETE FROM usage_report_ids`); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
	}
}
