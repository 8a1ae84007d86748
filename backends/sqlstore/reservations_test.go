package sqlstore

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/aigateway/gateway/files"
)

// testReservationRenew: a renewed reservation outlives its first ttl and
// still commits; one that lapsed, or was settled, is reported gone and
// never revived; one call renews many.
func testReservationRenew(t *testing.T, b backend) {
	s, ws := quotaFixture(t, b)
	clock := useClock(s)
	ctx := testContext(t)
	const ttl = 3 * time.Second
	var live []string
	for range 3 {
		res, err := s.Reserve(ctx, ws.ID, 100, 1000, ttl)
		if err != nil {
			t.Fatal(err)
		}
		live = append(live, res.ID)
	}
	lapsing, err := s.Reserve(ctx, ws.ID, 100, 1000, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	released, err := s.Reserve(ctx, ws.ID, 100, 1000, ttl)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Release(ctx, released); err != nil {
		t.Fatal(err)
	}
	// Ten lease periods, renewed every second: the live ones stay.
	for i := range 10 {
		clock.advance(time.Second)
		ids := append(slices.Clone(live), lapsing.ID, released.ID, "unknown")
		got, err := s.Renew(ctx, ids, ttl)
		if err != nil {
			t.Fatalf("Renew #%d: %v", i, err)
		}
		if slices.Sort(got); !slices.Equal(got, slices.Sorted(slices.Values(live))) {
			t.Fatalf("Renew #%d renewed %v, want only %v", i, got, live)
		}
	}
	// The lapsed one counts for nothing; the live ones still do.
	if _, err := s.Reserve(ctx, ws.ID, 701, 1000, ttl); !errors.Is(err, files.ErrQuotaExceeded) {
		t.Errorf("Reserve past the renewed reservations = %v, want ErrQuotaExceeded", err)
	}
	if err := s.Commit(ctx, files.Reservation{ID: live[0], WorkspaceID: ws.ID}, record(ws.ID, 100)); err != nil {
		t.Errorf("Commit of a reservation renewed past its first ttl: %v", err)
	}
	if got, err := s.Renew(ctx, live[:1], ttl); err != nil || len(got) != 0 {
		t.Errorf("Renew of a committed reservation = %v, %v; want none", got, err)
	}
	// Not renewed: the rest lapse one ttl after the last renewal.
	clock.advance(ttl)
	if got, err := s.Renew(ctx, live, ttl); err != nil || len(got) != 0 {
		t.Errorf("Renew after the lease lapsed = %v, %v; want none revived", got, err)
	}
	if _, err := s.Reserve(ctx, ws.ID, 900, 1000, ttl); err != nil {
		t.Errorf("Reserve once the lapsed reservations stopped counting: %v", err)
	}
	if got, err := s.Renew(ctx, nil, ttl); err != nil || len(got) != 0 {
		t.Errorf("Renew of nothing = %v, %v", got, err)
	}
	if _, err := s.Renew(ctx, live, 0); !errors.Is(err, ErrInvalidArgument) {
		t.Errorf("Renew for 0s = %v, want ErrInvalidArgument", err)
	}
}

// testReserveUpTo: an upload of unknown size takes what is left of the
// quota, up to what it asks; nothing left is ErrQuotaExceeded.
func testReserveUpTo(t *testing.T, b backend) {
	s, ws := quotaFixture(t, b)
	ctx := testContext(t)
	const limit = 1000
	first, err := s.ReserveUpTo(ctx, ws.ID, 300, limit, time.Minute)
	if err != nil || first.Bytes != 300 {
		t.Fatalf("ReserveUpTo with room = %+v, %v; want all 300 bytes", first, err)
	}
	res, err := s.Reserve(ctx, ws.ID, 600, limit, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Commit(ctx, res, record(ws.ID, 600)); err != nil {
		t.Fatal(err)
	}
	rest, err := s.ReserveUpTo(ctx, ws.ID, 300, limit, time.Minute)
	if err != nil || rest.Bytes != 100 {
		t.Fatalf("ReserveUpTo near the limit = %+v, %v; want the 100 bytes left", rest, err)
	}
	if _, err := s.ReserveUpTo(ctx, ws.ID, 300, limit, time.Minute); !errors.Is(err, files.ErrQuotaExceeded) {
		t.Errorf("ReserveUpTo of a full workspace = %v, want ErrQuotaExceeded", err)
	}
	if err := s.Commit(ctx, rest, record(ws.ID, 101)); !errors.Is(err, files.ErrQuotaExceeded) {
		t.Errorf("Commit past what was left = %v, want ErrQuotaExceeded", err)
	}
	if _, err := s.ReserveUpTo(ctx, uuid.NewString(), 1, limit, time.Minute); err == nil {
		t.Errorf("ReserveUpTo of an unknown workspace succeeded")
	}
}
