package files

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/aigateway/gateway/policy/limits/limitertest"
)

// leaseRig is a rig whose Service reads a settable clock, with a 3 s lease
// renewed every second.
func leaseRig(t *testing.T) (*rig, *limitertest.Clock) {
	t.Helper()
	r := newRig(t)
	clock := limitertest.NewClock()
	r.s.now = clock.Now
	r.s.cfg.ReservationTTL = 3 * time.Second
	return r, clock
}

// onRead runs before each read of a body, so a test can make time pass and
// renewals happen in the middle of an upload.
type onRead struct {
	chunks []string
	before func(i int)
	i      int
}

func (o *onRead) Read(p []byte) (int, error) {
	if o.i >= len(o.chunks) {
		return 0, io.EOF
	}
	if o.before != nil {
		o.before(o.i)
	}
	n := copy(p, o.chunks[o.i])
	o.i++
	return n, nil
}

func TestRenewalExtendsEveryUploadInOneCall(t *testing.T) {
	r, _ := leaseRig(t)
	r.s.renewReservations(t.Context()) // nothing in flight: no call at all
	if len(r.store.renewals) != 0 {
		t.Fatalf("renewed %v with no upload in flight", r.store.renewals)
	}
	var ids []string
	for range 3 {
		up, err := r.s.Begin(t.Context(), Params{Key: aliceKey, Declared: 100})
		if err != nil {
			t.Fatal(err)
		}
		defer up.Abort(t.Context())
		ids = append(ids, up.(*upload).res.ID)
	}
	r.s.renewReservations(t.Context())
	if len(r.store.renewals) != 1 {
		t.Fatalf("%d store calls for 3 uploads, want one", len(r.store.renewals))
	}
	got := slices.Sorted(slices.Values(r.store.renewals[0]))
	if !slices.Equal(got, slices.Sorted(slices.Values(ids))) {
		t.Errorf("renewed %v, want %v", got, ids)
	}
}

// A live upload much slower than its lease keeps its reservation as long as
// renewals succeed, and is stored.
func TestSlowUploadOutlivesItsLease(t *testing.T) {
	r, clock := leaseRig(t)
	body := &onRead{chunks: strings.Split(strings.Repeat("slow text\n", 20), "\n"), before: func(int) {
		clock.Advance(time.Second)
		r.s.renewReservations(t.Context())
	}}
	rec, err := r.upload(t.Context(), Params{Key: aliceKey, Declared: -1}, "slow.txt", body)
	if err != nil {
		t.Fatalf("upload over %d lease periods: %v", 20/3, err)
	}
	if len(r.store.renewals) < 20 || rec.Size == 0 || len(r.store.records) != 1 || len(r.store.reserved) != 0 {
		t.Errorf("%d renewals, size %d, records %v, reservations %v", len(r.store.renewals), rec.Size, r.store.records, r.store.reserved)
	}
}

func TestUploadStopsWhenItsReservationIsGone(t *testing.T) {
	r, _ := leaseRig(t)
	body := &onRead{chunks: []string{"first\n", "second\n", "third\n"}, before: func(i int) {
		if i == 1 {
			clear(r.store.reserved) // expired or swept meanwhile
			r.s.renewReservations(t.Context())
		}
	}}
	_, err := r.upload(t.Context(), Params{Key: aliceKey, Declared: -1}, "a.txt", body)
	if !errors.Is(err, ErrReservationLost) || !errors.Is(err, ErrStorageUnavailable) {
		t.Fatalf("err = %v, want ErrReservationLost (a 503)", err)
	}
	if r.bucket.count() != 0 || len(r.store.records) != 0 {
		t.Errorf("stored %d objects, %d records", r.bucket.count(), len(r.store.records))
	}
	r.assertNothingHeld(t)
}

// One failed renewal is retried; the upload stops when the next attempt
// would come too late, while its reservation still holds.
func TestUploadStopsWhenRenewalsKeepFailing(t *testing.T) {
	r, clock := leaseRig(t)
	up, err := r.s.Begin(t.Context(), Params{Key: aliceKey, Declared: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer up.Abort(t.Context())
	l := up.(*upload).lease
	r.store.renewErr = errors.New("connection refused")

	clock.Advance(time.Second)
	r.s.renewReservations(t.Context())
	if err := l.lost(); err != nil {
		t.Fatalf("lost after one failed renewal with 2s of lease left: %v", err)
	}
	clock.Advance(time.Second)
	r.s.renewReservations(t.Context())
	if err := l.lost(); !errors.Is(err, ErrReservationLost) {
		t.Fatalf("lease = %v after two failures with 1s left, want lost", err)
	}
	if err := up.Write(t.Context(), "a.txt", strings.NewReader(hello)); !errors.Is(err, ErrReservationLost) {
		t.Errorf("Write after the loss = %v", err)
	}
	if r.bucket.count() != 0 {
		t.Errorf("a lost upload stored its bytes")
	}
	up.Abort(t.Context())
	r.assertNothingHeld(t)
	if r.logs.atLevel(slog.LevelWarn) == 0 {
		t.Errorf("failed renewals were not logged")
	}
}

func TestCommitOfALapsedReservation(t *testing.T) {
	r, _ := leaseRig(t)
	up, err := r.s.Begin(t.Context(), Params{Key: aliceKey, Declared: 100})
	if err != nil {
		t.Fatal(err)
	}
	defer up.Abort(t.Context())
	if err := up.Write(t.Context(), "a.txt", strings.NewReader(hello)); err != nil {
		t.Fatal(err)
	}
	clear(r.store.reserved) // lapsed between the last renewal and the commit
	if _, err := up.Commit(t.Context(), ""); !errors.Is(err, ErrReservationLost) || !errors.Is(err, ErrReservationNotFound) {
		t.Fatalf("Commit = %v, want ErrReservationLost", err)
	}
	up.Abort(t.Context())
	if r.bucket.count() != 0 {
		t.Errorf("the bytes of an upload without a reservation stayed")
	}
	r.assertNothingHeld(t)
}

// A renewal that races a commit does not report the committed upload lost.
func TestRenewalAfterSettlementIsQuiet(t *testing.T) {
	r, _ := leaseRig(t)
	up, err := r.s.Begin(t.Context(), Params{Key: aliceKey, Declared: 100})
	if err != nil {
		t.Fatal(err)
	}
	l := up.(*upload).lease
	if err := up.Write(t.Context(), "a.txt", strings.NewReader(hello)); err != nil {
		t.Fatal(err)
	}
	if _, err := up.Commit(t.Context(), ""); err != nil {
		t.Fatal(err)
	}
	r.s.leases.add(l) // as if a renewal had taken its snapshot before the commit
	r.s.renewReservations(t.Context())
	if err := l.lost(); err != nil || r.logs.atLevel(slog.LevelWarn) != 0 {
		t.Errorf("committed upload's lease: %v, %d warnings", err, r.logs.atLevel(slog.LevelWarn))
	}
}

func TestKeepReservationsRenewsEachTick(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r, _ := leaseRig(t)
		up, err := r.s.Begin(t.Context(), Params{Key: aliceKey, Declared: 100})
		if err != nil {
			t.Fatal(err)
		}
		defer up.Abort(t.Context())
		tick := make(chan time.Time)
		go r.s.keepReservations(t.Context(), tick)
		for i := range 3 {
			tick <- time.Time{}
			synctest.Wait()
			if n := len(r.store.renewals); n != i+1 {
				t.Fatalf("%d renewals after %d ticks", n, i+1)
			}
		}
	})
}

func TestKeepReservationsStopsWithItsContext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r, _ := leaseRig(t)
		up, err := r.s.Begin(t.Context(), Params{Key: aliceKey, Declared: 100})
		if err != nil {
			t.Fatal(err)
		}
		defer up.Abort(t.Context())
		done := make(chan struct{})
		ctx, stop := context.WithCancel(t.Context())
		go func() { r.s.KeepReservations(ctx); close(done) }()
		time.Sleep(2*r.s.RenewInterval() + time.Millisecond) // the bubble's fake clock: two ticks
		synctest.Wait()
		if n := len(r.store.renewals); n != 2 {
			t.Errorf("%d renewals in two intervals, want 2", n)
		}
		stop()
		synctest.Wait()
		select {
		case <-done:
		default:
			t.Fatal("KeepReservations still runs after its context ended")
		}
	})
}
