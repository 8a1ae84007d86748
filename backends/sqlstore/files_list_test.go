package sqlstore

import (
	"errors"
	"fmt"
	"reflect"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/aigateway/gateway/files"
	"github.com/aigateway/gateway/policy/keys"
)

func TestSQLiteFileReads(t *testing.T) {
	t.Parallel()
	runFileReads(t, sqliteBackend())
}

func TestPostgresFileReads(t *testing.T) {
	t.Parallel()
	runFileReads(t, postgresBackend(t))
}

// runFileReads is the contract of listing and deleting records, on every
// database.
func runFileReads(t *testing.T, b backend) {
	for name, run := range map[string]func(*testing.T, backend){
		"List/Order":         testListOrder,
		"List/StableWalk":    testListStableWalk,
		"List/Visibility":    testListVisibility,
		"Delete/GivesBack":   testDeleteGivesBack,
		"Delete/Race":        testDeleteRace,
		"Keys/ServiceRole":   testServiceKeyRole,
		"Migrations/Listing": testListingIndex,
		"List/Purpose":       testListPurpose,
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			run(t, b)
		})
	}
}

// commitFile stores a record of size bytes created at at, through the
// quota like an upload.
func commitFile(t *testing.T, s *Store, ws string, size int64, at time.Time) files.Record {
	t.Helper()
	ctx := testContext(t)
	res, err := s.Reserve(ctx, ws, size, 1<<40, time.Minute)
	if err != nil {
		t.Fatalf("Reserve: %v", err)
	}
	rec := record(ws, size)
	rec.CreatedAt = micro(at)
	if err := s.Commit(ctx, res, rec); err != nil {
		t.Fatalf("Commit: %v", err)
	}
	return rec
}

func ids(rs []files.Record) []string {
	out := make([]string, len(rs))
	for i, r := range rs {
		out[i] = r.ID
	}
	return out
}

func testListOrder(t *testing.T, b backend) {
	s, ws := quotaFixture(t, b)
	ctx := testContext(t)
	base := time.Date(2026, 8, 18, 10, 0, 0, 0, time.UTC)
	var recs []files.Record // oldest first
	for i := range 5 {
		recs = append(recs, commitFile(t, s, ws.ID, int64(i+1), base.Add(time.Duration(i)*time.Second)))
	}
	// Two files of the same microsecond: the id breaks the tie.
	tie1, tie2 := commitFile(t, s, ws.ID, 10, base.Add(10*time.Second)), commitFile(t, s, ws.ID, 11, base.Add(10*time.Second))
	if tie1.ID > tie2.ID {
		tie1, tie2 = tie2, tie1
	}
	recs = append(recs, tie1, tie2)
	want := ids(recs)

	walk := func(asc bool, limit int) (got []string, pages int) {
		var after *files.Position
		for {
			page, err := s.ListFiles(ctx, files.ListQuery{WorkspaceID: ws.ID, Limit: limit, Ascending: asc, After: after})
			if err != nil {
				t.Fatalf("ListFiles: %v", err)
			}
			pages++
			got = append(got, ids(page.Records)...)
			if !page.HasMore {
				return got, pages
			}
			last := page.Records[len(page.Records)-1]
			after = &files.Position{CreatedAt: last.CreatedAt, ID: last.ID}
		}
	}
	if got, pages := walk(true, 2); !reflect.DeepEqual(got, want) || pages != 4 {
		t.Errorf("ascending walk = %v in %d pages, want %v in 4", got, pages, want)
	}
	reversed := make([]string, len(want))
	for i, id := range want {
		reversed[len(want)-1-i] = id
	}
	if got, pages := walk(false, 3); !reflect.DeepEqual(got, reversed) || pages != 3 {
		t.Errorf("descending walk = %v in %d pages, want %v in 3", got, pages, reversed)
	}
	// A page exactly as long as what is left says there is no more.
	if got, pages := walk(false, 7); len(got) != 7 || pages != 1 {
		t.Errorf("one page of 7 = %d records in %d pages", len(got), pages)
	}
	page, err := s.ListFiles(ctx, files.ListQuery{WorkspaceID: ws.ID, Limit: 1})
	if err != nil || len(page.Records) != 1 || !reflect.DeepEqual(page.Records[0], tie2) {
		t.Errorf("newest = %+v, %v; want %+v", page.Records, err, tie2)
	}
	if _, err := s.ListFiles(ctx, files.ListQuery{WorkspaceID: ws.ID}); err == nil {
		t.Error("ListFiles with limit 0 succeeded")
	}
}

// testListStableWalk: a file that exists for the whole walk is returned
// exactly once, whatever is added and removed between pages.
func testListStableWalk(t *testing.T, b backend) {
	s, ws := quotaFixture(t, b)
	ctx := testContext(t)
	base := time.Date(2026, 8, 18, 10, 0, 0, 0, time.UTC)
	var stable []files.Record
	for i := range 12 {
		stable = append(stable, commitFile(t, s, ws.ID, 1, base.Add(time.Duration(i)*time.Minute)))
	}
	doomed := commitFile(t, s, ws.ID, 1, base.Add(30*time.Second)) // among the oldest
	seen := map[string]int{}
	var after *files.Position
	for n := 0; ; n++ {
		page, err := s.ListFiles(ctx, files.ListQuery{WorkspaceID: ws.ID, Limit: 4, After: after})
		if err != nil {
			t.Fatalf("ListFiles: %v", err)
		}
		for _, r := range page.Records {
			seen[r.ID]++
		}
		if !page.HasMore {
			break
		}
		last := page.Records[len(page.Records)-1]
		after = &files.Position{CreatedAt: last.CreatedAt, ID: last.ID}
		// Between pages: a newer upload, a deletion of an already seen file
		// and of one not reached yet.
		commitFile(t, s, ws.ID, 1, base.Add(time.Hour+time.Duration(n)*time.Second))
		if n == 0 {
			if _, err := s.DeleteFile(ctx, ws.ID, page.Records[0].ID); err != nil {
				t.Fatalf("DeleteFile: %v", err)
			}
			if _, err := s.DeleteFile(ctx, ws.ID, doomed.ID); err != nil {
				t.Fatalf("DeleteFile: %v", err)
			}
		}
	}
	for _, r := range stable {
		if seen[r.ID] != 1 && r.CreatedAt.Before(base.Add(11*time.Minute)) {
			t.Errorf("file %s seen %d times, want 1", r.ID, seen[r.ID])
		}
	}
	if seen[doomed.ID] != 0 {
		t.Errorf("a file deleted before the walk reached it was returned")
	}
	for id, n := range seen {
		if n > 1 {
			t.Errorf("file %s returned %d times", id, n)
		}
	}
}

func testListVisibility(t *testing.T, b backend) {
	s, ws := quotaFixture(t, b)
	ctx := testContext(t)
	commitFile(t, s, ws.ID, 1, time.Now())
	mustUser(t, s, "bob")
	other := mustWorkspace(t, s, "bob", "other")
	for name, wsID := range map[string]string{"empty workspace": other.ID, "malformed id": "nope", "unknown": "00000000-0000-4000-8000-000000000000"} {
		page, err := s.ListFiles(ctx, files.ListQuery{WorkspaceID: wsID, Limit: 10})
		if err != nil || len(page.Records) != 0 || page.HasMore {
			t.Errorf("%s: ListFiles = %+v, %v; want an empty page", name, page, err)
		}
	}
}

func testDeleteGivesBack(t *testing.T, b backend) {
	s, ws := quotaFixture(t, b)
	ctx := testContext(t)
	keep := commitFile(t, s, ws.ID, 300, time.Now())
	gone := commitFile(t, s, ws.ID, 700, time.Now())
	mustUser(t, s, "bob")
	other := mustWorkspace(t, s, "bob", "other")
	if _, err := s.DeleteFile(ctx, other.ID, gone.ID); !errors.Is(err, files.ErrNotFound) {
		t.Errorf("DeleteFile from another workspace = %v, want ErrNotFound", err)
	}
	if _, err := s.DeleteFile(ctx, "nope", gone.ID); !errors.Is(err, files.ErrNotFound) {
		t.Errorf("DeleteFile with a malformed workspace id = %v, want ErrNotFound", err)
	}
	got, err := s.DeleteFile(ctx, ws.ID, gone.ID)
	if err != nil || !reflect.DeepEqual(got, gone) {
		t.Fatalf("DeleteFile = %+v, %v; want %+v", got, err, gone)
	}
	if n, err := s.StoredBytes(ctx, ws.ID); err != nil || n != keep.Size {
		t.Errorf("StoredBytes after delete = %d, %v; want %d", n, err, keep.Size)
	}
	if _, err := s.FileByID(ctx, ws.ID, gone.ID); !errors.Is(err, files.ErrNotFound) {
		t.Errorf("FileByID after delete = %v, want ErrNotFound", err)
	}
	if _, err := s.DeleteFile(ctx, ws.ID, gone.ID); !errors.Is(err, files.ErrNotFound) {
		t.Errorf("second DeleteFile = %v, want ErrNotFound", err)
	}
	// The quota given back can be reserved again at once.
	if _, err := s.Reserve(ctx, ws.ID, 700, 1000, time.Minute); err != nil {
		t.Errorf("Reserve of the freed bytes: %v", err)
	}
	// Its place in the listing outlives it (paging from it), in its own
	// workspace only, and is swept after a day.
	for id, want := range map[string]files.Position{keep.ID: {CreatedAt: keep.CreatedAt, ID: keep.ID}, gone.ID: {CreatedAt: gone.CreatedAt, ID: gone.ID}} {
		if p, err := s.FilePosition(ctx, ws.ID, id); err != nil || !p.CreatedAt.Equal(want.CreatedAt) || p.ID != want.ID {
			t.Errorf("FilePosition(%s) = %+v, %v; want %+v", id, p, err, want)
		}
	}
	if _, err := s.FilePosition(ctx, other.ID, gone.ID); !errors.Is(err, files.ErrNotFound) {
		t.Errorf("FilePosition from another workspace = %v, want ErrNotFound", err)
	}
	if _, err := s.FilePosition(ctx, ws.ID, "file-never"); !errors.Is(err, files.ErrNotFound) {
		t.Errorf("FilePosition of an unknown id = %v, want ErrNotFound", err)
	}
	s.now = func() time.Time { return time.Now().Add(DeletedFileRetention + time.Minute) }
	if n, err := s.SweepDeletedFiles(ctx, 10); err != nil || n != 1 {
		t.Errorf("SweepDeletedFiles = %d, %v; want 1", n, err)
	}
	if _, err := s.FilePosition(ctx, ws.ID, gone.ID); !errors.Is(err, files.ErrNotFound) {
		t.Errorf("FilePosition after the sweep = %v, want ErrNotFound", err)
	}
}

func testDeleteRace(t *testing.T, b backend) {
	s, ws := quotaFixture(t, b)
	ctx := testContext(t)
	keep := commitFile(t, s, ws.ID, 5, time.Now())
	for round := range 5 {
		rec := commitFile(t, s, ws.ID, 1000, time.Now())
		const racers = 4
		errs := make([]error, racers)
		var wg sync.WaitGroup
		for i := range racers {
			wg.Go(func() { _, errs[i] = s.DeleteFile(ctx, ws.ID, rec.ID) })
		}
		wg.Wait()
		won := 0
		for _, err := range errs {
			switch {
			case err == nil:
				won++
			case !errors.Is(err, files.ErrNotFound):
				t.Errorf("round %d: DeleteFile = %v, want nil or ErrNotFound", round, err)
			}
		}
		if won != 1 {
			t.Errorf("round %d: %d deletes won, want 1", round, won)
		}
		if n, err := s.StoredBytes(ctx, ws.ID); err != nil || n != keep.Size {
			t.Fatalf("round %d: StoredBytes = %d, %v; want %d", round, n, err, keep.Size)
		}
	}
}

func testServiceKeyRole(t *testing.T, b backend) {
	s := b.store(t)
	ctx := testContext(t)
	mustUser(t, s, "alice")
	_, k, err := keys.NewKey()
	if err != nil {
		t.Fatal(err)
	}
	k.UserID, k.Name, k.Role, k.CreatedAt = "alice", "indexer", keys.RoleService, time.Now().UTC().Truncate(time.Microsecond)
	if err := s.CreateKey(ctx, k); err != nil {
		t.Fatalf("CreateKey(service): %v", err)
	}
	got, err := s.KeyByID(ctx, k.ID)
	if err != nil || got.Role != keys.RoleService || got.WorkspaceID != "" {
		t.Errorf("KeyByID = %+v, %v; want a service key without a workspace", got, err)
	}
}

// testListingIndex: the listing index exists under its name and replaced the
// single-column one.
func testListingIndex(t *testing.T, b backend) { testListingIndexOn(t, b, b.store(t)) }

func testListingIndexOn(t *testing.T, b backend, s *Store) {
	t.Helper()
	q := `SELECT COUNT(*) FROM pg_indexes WHERE indexname = $1`
	if b.driver == DriverSQLite {
		q = `SELECT COUNT(*) FROM sqlite_master WHERE type = 'index' AND name = $1`
	}
	for name, want := range map[string]int{"files_workspace_created": 1, "files_workspace_id": 0, "api_keys_workspace_id": 1} {
		if n := count(t, s, q, name); n != want {
			t.Errorf("index %s: %d, want %d", name, n, want)
		}
	}
}

// BenchmarkListFiles lists a page of 100 in a workspace of 100,000 files,
// from a position in the middle, and reports the median per operation.
func BenchmarkListFiles(b *testing.B) {
	for _, be := range []struct {
		name string
		b    func(testing.TB) backend
	}{{"sqlite", func(testing.TB) backend { return sqliteBackend() }}, {"postgres", postgresBackend}} {
		b.Run(be.name, func(b *testing.B) {
			s, ws := benchWorkspace(b, be.b(b), 100_000)
			ctx := testContext(b)
			mid := &files.Position{CreatedAt: benchBase.Add(50_000 * time.Second), ID: "file-50000"}
			durations := make([]time.Duration, 0, b.N)
			b.ResetTimer()
			for range b.N {
				start := time.Now()
				page, err := s.ListFiles(ctx, files.ListQuery{WorkspaceID: ws, Limit: 100, After: mid})
				durations = append(durations, time.Since(start))
				if err != nil || len(page.Records) != 100 || !page.HasMore {
					b.Fatalf("ListFiles = %d records, %v", len(page.Records), err)
				}
			}
			b.StopTimer()
			slices.Sort(durations)
			b.ReportMetric(float64(durations[len(durations)/2].Microseconds())/1000, "p50-ms")
		})
	}
}

var benchBase = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// benchWorkspace fills a workspace with n records in one transaction,
// written directly: going through Reserve and Commit would take minutes.
func benchWorkspace(b *testing.B, be backend, n int) (*Store, string) {
	b.Helper()
	s := be.store(b)
	ctx := testContext(b)
	if err := s.EnsureUser(ctx, "bench"); err != nil {
		b.Fatal(err)
	}
	w := newWorkspace("bench", "bench")
	if _, err := s.CreateWorkspace(ctx, w, nil); err != nil {
		b.Fatal(err)
	}
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		b.Fatal(err)
	}
	stmt, err := tx.PrepareContext(ctx, `INSERT INTO files (`+fileColumns+`, sha256) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, '')`)
	if err != nil {
		b.Fatal(err)
	}
	for i := range n {
		at := benchBase.Add(time.Duration(i) * time.Second)
		if _, err := stmt.ExecContext(ctx, fmt.Sprintf("file-%05d", i), w.ID, "k", "f.txt", "text/plain", 1,
			"fs", "o", "user_data", s.d.ts(at)); err != nil {
			b.Fatal(err)
		}
	}
	if err := tx.Commit(); err != nil {
		b.Fatal(err)
	}
	if _, err := s.w.ExecContext(ctx, "ANALYZE"); err != nil {
		b.Fatal(err)
	}
	return s, w.ID
}

// testPlaceholderReplaced: a database that recorded the placeholder of
// version 4 (made by a binary from before the file listing) gets the real
// migration on its next Open.
func testPlaceholderReplaced(t *testing.T, b backend) {
	dsn := b.fresh(t)
	s := b.open(t, dsn)
	ctx := testContext(t)
	for _, stmt := range []string{
		`DROP INDEX files_workspace_created`,
		`CREATE INDEX files_workspace_id ON files (workspace_id)`,
		`UPDATE schema_migrations SET name = '0004_reserved_for_file_listing' WHERE version = 4`,
	} {
		if _, err := s.w.ExecContext(ctx, stmt); err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
	}
	again := b.open(t, dsn)
	testListingIndexOn(t, b, again)
	var name string
	rawQuery(t, again.r, &name, `SELECT name FROM schema_migrations WHERE version = 4`)
	if name != "0004_file_listing" {
		t.Errorf("version 4 recorded as %q", name)
	}
	mustUser(t, again, "alice")
	_, k, _ := keys.NewKey()
	k.UserID, k.Name, k.Role, k.CreatedAt = "alice", "svc", keys.RoleService, time.Now()
	if err := again.CreateKey(ctx, k); err != nil {
		t.Errorf("CreateKey(service) after the upgrade: %v", err)
	}
}

// testListPurpose: a purpose filter keeps the files uploaded for it, in
// order, paged.
func testListPurpose(t *testing.T, b backend) {
	s, ws := quotaFixture(t, b)
	ctx := testContext(t)
	base := time.Date(2026, 8, 18, 10, 0, 0, 0, time.UTC)
	var batch []string
	for i := range 6 {
		res, err := s.Reserve(ctx, ws.ID, 1, 1<<40, time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		rec := record(ws.ID, 1)
		rec.CreatedAt = micro(base.Add(time.Duration(i) * time.Second))
		rec.Purpose = files.PurposeUserData
		if i%2 == 0 {
			rec.Purpose = files.PurposeBatch
			batch = append(batch, rec.ID)
		}
		if err := s.Commit(ctx, res, rec); err != nil {
			t.Fatal(err)
		}
	}
	page, err := s.ListFiles(ctx, files.ListQuery{WorkspaceID: ws.ID, Limit: 2, Ascending: true, Purpose: files.PurposeBatch})
	if err != nil || !reflect.DeepEqual(ids(page.Records), batch[:2]) || !page.HasMore {
		t.Fatalf("first page %v (more %v), %v; want %v", ids(page.Records), page.HasMore, err, batch[:2])
	}
	last := page.Records[1]
	page, err = s.ListFiles(ctx, files.ListQuery{WorkspaceID: ws.ID, Limit: 2, Ascending: true, Purpose: files.PurposeBatch,
		After: &files.Position{CreatedAt: last.CreatedAt, ID: last.ID}})
	if err != nil || !reflect.DeepEqual(ids(page.Records), batch[2:]) || page.HasMore {
		t.Fatalf("second page %v, %v; want %v", ids(page.Records), err, batch[2:])
	}
}
