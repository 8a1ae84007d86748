package sqlstore

import (
	"slices"
	"testing"
	"time"

	"github.com/aigateway/gateway/files"
	"github.com/aigateway/gateway/workspace"
)

// testSweepReservations: only expired reservations go, at most limit per
// call, and sweeping again is harmless.
func testSweepReservations(t *testing.T, b backend) {
	s, ws := quotaFixture(t, b)
	clock := useClock(s)
	ctx := testContext(t)
	for range 5 {
		if _, err := s.Reserve(ctx, ws.ID, 1, 1000, time.Second); err != nil {
			t.Fatal(err)
		}
	}
	live, err := s.Reserve(ctx, ws.ID, 1, 1000, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if n, err := s.SweepReservations(ctx, 10); err != nil || n != 0 {
		t.Fatalf("SweepReservations before expiry = %d, %v; want 0", n, err)
	}
	clock.advance(time.Second)
	var per []int
	for range 3 {
		n, err := s.SweepReservations(ctx, 2)
		if err != nil {
			t.Fatal(err)
		}
		per = append(per, n)
	}
	if n, _ := s.SweepReservations(ctx, 2); !slices.Equal(per, []int{2, 2, 1}) || n != 0 {
		t.Errorf("swept %v then %d, want [2 2 1] then 0", per, n)
	}
	if n := count(t, s, `SELECT COUNT(*) FROM quota_reservations WHERE id = $1`, live.ID); n != 1 {
		t.Errorf("a live reservation was swept")
	}
}

// testSweepIdempotency: records past workspace.IdempotencyTTL go, younger
// ones stay.
func testSweepIdempotency(t *testing.T, b backend) {
	s := b.store(t)
	clock := useClock(s)
	ctx := testContext(t)
	mustUser(t, s, "alice")
	for _, slug := range []string{"one", "two", "three"} {
		w := newWorkspace("alice", slug)
		if _, err := s.CreateWorkspace(ctx, w, idemFor("alice", "k-"+slug, w)); err != nil {
			t.Fatal(err)
		}
	}
	clock.advance(workspace.IdempotencyTTL - time.Second)
	young := newWorkspace("alice", "young")
	if _, err := s.CreateWorkspace(ctx, young, idemFor("alice", "k-young", young)); err != nil {
		t.Fatal(err)
	}
	if n, err := s.SweepIdempotency(ctx, 10); err != nil || n != 0 {
		t.Fatalf("SweepIdempotency before expiry = %d, %v; want 0", n, err)
	}
	clock.advance(time.Second)
	n1, err := s.SweepIdempotency(ctx, 2)
	if err != nil {
		t.Fatal(err)
	}
	n2, err := s.SweepIdempotency(ctx, 2)
	if err != nil {
		t.Fatal(err)
	}
	if n1 != 2 || n2 != 1 {
		t.Errorf("swept %d then %d, want 2 then 1", n1, n2)
	}
	if n := count(t, s, `SELECT COUNT(*) FROM idempotency_records`); n != 1 {
		t.Errorf("%d records left, want the young one", n)
	}
}

// testSweepObjects: KnownObjects tells recorded objects from others, per
// backend; FilesAfter pages every record of a backend in id order.
func testSweepObjects(t *testing.T, b backend) {
	s, ws := quotaFixture(t, b)
	ctx := testContext(t)
	var recs []files.Record
	for i := range 5 {
		rec := record(ws.ID, 1)
		if i == 4 {
			rec.Backend = "s3"
		}
		res, err := s.Reserve(ctx, ws.ID, 1, 1000, time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Commit(ctx, res, rec); err != nil {
			t.Fatal(err)
		}
		recs = append(recs, rec)
	}
	known, err := s.KnownObjects(ctx, "fs", []string{recs[0].ObjectKey, recs[1].ObjectKey, "objects/none", recs[4].ObjectKey})
	if err != nil {
		t.Fatal(err)
	}
	if len(known) != 2 || !known[recs[0].ObjectKey] || !known[recs[1].ObjectKey] {
		t.Errorf("KnownObjects = %v, want the two fs records' objects", known)
	}
	var ids []string
	for after := ""; ; {
		page, err := s.FilesAfter(ctx, "fs", after, 3)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range page {
			ids = append(ids, r.ID)
			if r.ObjectKey == "" || r.WorkspaceID != ws.ID {
				t.Errorf("FilesAfter record %+v lacks its object or workspace", r)
			}
		}
		if len(page) < 3 {
			break
		}
		after = page[len(page)-1].ID
	}
	var want []string
	for _, r := range recs[:4] {
		want = append(want, r.ID)
	}
	slices.Sort(want)
	if !slices.Equal(ids, want) {
		t.Errorf("FilesAfter paged %v, want the fs records in id order %v", ids, want)
	}
}
