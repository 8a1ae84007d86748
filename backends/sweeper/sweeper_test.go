package sweeper

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/aigateway/gateway/files"
	"github.com/aigateway/gateway/files/blob"
	"github.com/aigateway/gateway/policy/limits/limitertest"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

// fakeStore keeps counts of expired rows and the file records.
type fakeStore struct {
	expiredReservations, expiredIdempotency, oldKeyChanges, oldDeletedFiles int
	records                                                                 []files.Record // sorted by id
	err                                                                     error

	expiredUploads int
	oldUploadRows  int
	parts          []files.UploadPart // rows of upload parts
	settled        map[string]bool    // upload ids no longer pending
}

func (s *fakeStore) take(n *int, limit int) (int, error) {
	if s.err != nil {
		return 0, s.err
	}
	k := min(*n, limit)
	*n -= k
	return k, nil
}

func (s *fakeStore) SweepReservations(_ context.Context, limit int) (int, error) {
	return s.take(&s.expiredReservations, limit)
}

func (s *fakeStore) SweepIdempotency(_ context.Context, limit int) (int, error) {
	return s.take(&s.expiredIdempotency, limit)
}

func (s *fakeStore) SweepKeyChanges(_ context.Context, limit int) (int, error) {
	return s.take(&s.oldKeyChanges, limit)
}

func (s *fakeStore) SweepDeletedFiles(_ context.Context, limit int) (int, error) {
	return s.take(&s.oldDeletedFiles, limit)
}

func (s *fakeStore) KnownObjects(_ context.Context, backend string, keys []string) (map[string]bool, error) {
	if s.err != nil {
		return nil, s.err
	}
	known := map[string]bool{}
	for _, r := range s.records {
		if r.Backend == backend && slices.Contains(keys, r.ObjectKey) {
			known[r.ObjectKey] = true
		}
	}
	return known, nil
}

func (s *fakeStore) FileByID(_ context.Context, _, id string) (files.Record, error) {
	for _, r := range s.records {
		if r.ID == id {
			return r, nil
		}
	}
	return files.Record{}, files.ErrNotFound
}

func (s *fakeStore) ExpireUploads(_ context.Context, limit int) (int, error) {
	return s.take(&s.expiredUploads, limit)
}

func (s *fakeStore) SweepUploads(_ context.Context, limit int) (int, error) {
	return s.take(&s.oldUploadRows, limit)
}

func (s *fakeStore) RemovableParts(_ context.Context, limit int) ([]files.UploadPart, error) {
	var out []files.UploadPart
	for _, p := range s.parts {
		if s.settled[p.UploadID] && len(out) < limit {
			out = append(out, p)
		}
	}
	return out, s.err
}

func (s *fakeStore) DeleteParts(_ context.Context, ids []string) error {
	s.parts = slices.DeleteFunc(s.parts, func(p files.UploadPart) bool { return slices.Contains(ids, p.ID) })
	return s.err
}

func (s *fakeStore) KnownParts(_ context.Context, keys []string) (map[string]bool, error) {
	known := map[string]bool{}
	for _, p := range s.parts {
		if slices.Contains(keys, p.ObjectKey) {
			known[p.ObjectKey] = true
		}
	}
	return known, s.err
}

// deletedDuring is a fakeStore whose records vanish once listed, as a file
// deleted while the sweeper checks it.
type deletedDuring struct{ *fakeStore }

func (d deletedDuring) FilesAfter(ctx context.Context, backend, after string, limit int) ([]files.Record, error) {
	recs, err := d.fakeStore.FilesAfter(ctx, backend, after, limit)
	d.records = nil
	return recs, err
}

func (s *fakeStore) FilesAfter(_ context.Context, backend, after string, limit int) ([]files.Record, error) {
	if s.err != nil {
		return nil, s.err
	}
	var out []files.Record
	for _, r := range s.records {
		if r.Backend == backend && r.ID > after && len(out) < limit {
			out = append(out, r)
		}
	}
	return out, nil
}

// fakeBucket holds objects with their times, and pending uploads.
type fakeBucket struct {
	mu      sync.Mutex
	objects map[string]time.Time
	pending []time.Time
	cutoffs []time.Time // of each AbortPending call
	paged   int         // keys handed out by ListAfter
}

var (
	_ blob.Bucket  = (*fakeBucket)(nil)
	_ blob.Pending = (*fakeBucket)(nil)
)

func (b *fakeBucket) Upload(context.Context, string, io.Reader, int64, blob.UploadOptions) (blob.Object, error) {
	return blob.Object{}, errors.New("not used")
}

func (b *fakeBucket) Compose(context.Context, string, []string, blob.UploadOptions) (blob.Object, error) {
	return blob.Object{}, errors.New("not used")
}

func (b *fakeBucket) Open(context.Context, string) (io.ReadCloser, error) {
	return nil, errors.New("not used")
}

func (b *fakeBucket) OpenRange(context.Context, string, int64, int64) (io.ReadCloser, error) {
	return nil, errors.New("not used")
}

func (b *fakeBucket) Stat(_ context.Context, key string) (blob.Object, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	t, ok := b.objects[key]
	if !ok {
		return blob.Object{}, blob.ErrNotFound
	}
	return blob.Object{Key: key, Size: 1, Modified: t}, nil
}

func (b *fakeBucket) Delete(_ context.Context, key string) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.objects, key)
	return nil
}

func (b *fakeBucket) Check(context.Context) error { return nil }

func (b *fakeBucket) Close() error { return nil }

func (b *fakeBucket) List(_ context.Context, prefix string) ([]string, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	var keys []string
	for k := range b.objects {
		if strings.HasPrefix(k, prefix) {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	return keys, nil
}

func (b *fakeBucket) ListAfter(ctx context.Context, prefix, after string, limit int) ([]string, error) {
	keys, _ := b.List(ctx, prefix)
	var out []string
	for _, k := range keys {
		if k > after && len(out) < limit {
			out = append(out, k)
		}
	}
	b.mu.Lock()
	b.paged += len(out)
	b.mu.Unlock()
	return out, nil
}

func (b *fakeBucket) PendingUploads(context.Context) ([]string, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []string
	for _, t := range b.pending {
		out = append(out, t.String())
	}
	return out, nil
}

func (b *fakeBucket) AbortPending(_ context.Context, before time.Time, limit int) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.cutoffs = append(b.cutoffs, before)
	n := 0
	b.pending = slices.DeleteFunc(b.pending, func(t time.Time) bool {
		if n < limit && t.Before(before) {
			n++
			return true
		}
		return false
	})
	return n, nil
}

type logBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

type rig struct {
	s      *Sweeper
	store  *fakeStore
	bucket *fakeBucket
	clock  *limitertest.Clock
	logs   *logBuffer
}

const grace = time.Hour

func newRig(t *testing.T, batch int) *rig {
	t.Helper()
	r := &rig{store: &fakeStore{}, bucket: &fakeBucket{objects: map[string]time.Time{}}, clock: limitertest.NewClock(), logs: &logBuffer{}}
	log := slog.New(slog.NewTextHandler(r.logs, nil))
	r.s = New(Config{Interval: time.Minute, Grace: grace, Batch: batch, Backend: "fs"}, r.store, r.bucket, log, prometheus.NewRegistry())
	r.s.now = r.clock.Now
	return r
}

// object stores key, written age ago, with a record when recorded.
func (r *rig) object(key string, age time.Duration, recorded bool) {
	r.bucket.objects[key] = r.clock.Now().Add(-age)
	if recorded {
		r.store.records = append(r.store.records, files.Record{ID: "file-" + key[len(key)-1:], Backend: "fs", ObjectKey: key})
		slices.SortFunc(r.store.records, func(a, b files.Record) int { return strings.Compare(a.ID, b.ID) })
	}
}

func (r *rig) removed(kind string) float64 {
	return testutil.ToFloat64(r.s.removed.WithLabelValues(kind))
}

func TestSweepRemovesExpiredRows(t *testing.T) {
	r := newRig(t, 10)
	r.store.expiredReservations, r.store.expiredIdempotency, r.store.oldKeyChanges = 25, 3, 12
	var got []Result
	for range 4 {
		got = append(got, r.s.Sweep(t.Context()))
	}
	var res, idem, changes []int
	for _, g := range got {
		res, idem, changes = append(res, g.Reservations), append(idem, g.IdempotencyRecords), append(changes, g.KeyChanges)
	}
	if !slices.Equal(res, []int{10, 10, 5, 0}) || !slices.Equal(idem, []int{3, 0, 0, 0}) || !slices.Equal(changes, []int{10, 2, 0, 0}) {
		t.Errorf("per pass: reservations %v, idempotency records %v, key changes %v; want batches of at most 10", res, idem, changes)
	}
	if r.removed(KindReservation) != 25 || r.removed(KindIdempotency) != 3 || r.removed(KindKeyChange) != 12 {
		t.Errorf("metrics: %v reservations, %v idempotency records, %v key changes", r.removed(KindReservation), r.removed(KindIdempotency), r.removed(KindKeyChange))
	}
}

func TestSweepRemovesOldObjectsWithoutRecord(t *testing.T) {
	r := newRig(t, 100)
	r.object("ws/a/orphan-1", 2*grace, false)
	r.object("ws/a/young-2", grace/2, false) // maybe an upload about to commit
	r.object("ws/a/kept-3", 2*grace, true)
	r.object("other/x-4", 2*grace, false) // not the upload service's
	got := r.s.Sweep(t.Context())
	if got.Objects != 1 || got.Errors != 0 {
		t.Errorf("pass = %+v, want one object removed", got)
	}
	keys, _ := r.bucket.List(t.Context(), "")
	if want := []string{"other/x-4", "ws/a/kept-3", "ws/a/young-2"}; !slices.Equal(keys, want) {
		t.Errorf("bucket holds %v, want %v", keys, want)
	}
	if r.removed(KindObject) != 1 || !strings.Contains(r.logs.String(), "ws/a/orphan-1") {
		t.Errorf("the removal was not counted and logged:\n%s", r.logs)
	}
	// Once old enough, the young one goes too; a second pass is idempotent.
	r.clock.Advance(grace)
	r.s.Sweep(t.Context())
	r.s.Sweep(t.Context())
	if keys, _ := r.bucket.List(t.Context(), "ws/"); !slices.Equal(keys, []string{"ws/a/kept-3"}) {
		t.Errorf("bucket holds %v, want only the recorded object", keys)
	}
}

// Each pass checks at most Batch objects, and the cursor walks the whole
// bucket over several passes before it starts over, never listing it whole.
func TestSweepObjectsIsBoundedPerPass(t *testing.T) {
	r := newRig(t, 2)
	for _, k := range []string{"ws/a/o-1", "ws/a/o-2", "ws/a/o-3", "ws/a/o-4", "ws/a/o-5"} {
		r.object(k, 2*grace, false)
	}
	var per []int
	for range 4 {
		per = append(per, r.s.Sweep(t.Context()).Objects)
	}
	if !slices.Equal(per, []int{2, 2, 1, 0}) {
		t.Errorf("objects removed per pass %v, want [2 2 1 0]", per)
	}
	r.object("ws/a/o-0", 2*grace, false) // sorts before the cursor's last position
	if n := r.s.Sweep(t.Context()).Objects; n != 1 {
		t.Errorf("after a full cycle the cursor did not start over: removed %d", n)
	}
	if r.bucket.paged > 5*2 {
		t.Errorf("listed %d keys in 5 passes of at most 2", r.bucket.paged)
	}
}

// A bucket that keeps no state for unfinished uploads (gcs) is swept for
// objects all the same, and no pending removal is reported.
func TestSweepWithoutPendingState(t *testing.T) {
	r := newRig(t, 100)
	r.s.bucket = struct{ blob.Bucket }{r.bucket} // hides AbortPending
	r.bucket.pending = []time.Time{r.clock.Now().Add(-2 * grace)}
	r.object("ws/a/orphan-1", 2*grace, false)
	got := r.s.Sweep(t.Context())
	if got.Objects != 1 || got.Pending != 0 || got.Errors != 0 || len(r.bucket.cutoffs) != 0 {
		t.Errorf("pass = %+v, AbortPending calls %d; want the object removed and no pending sweep", got, len(r.bucket.cutoffs))
	}
}

func TestSweepReportsRecordsWithoutObject(t *testing.T) {
	r := newRig(t, 100)
	r.object("ws/a/kept-1", 2*grace, true)
	r.object("ws/a/gone-2", 2*grace, true)
	delete(r.bucket.objects, "ws/a/gone-2")
	got := r.s.Sweep(t.Context())
	if got.Missing != 1 || testutil.ToFloat64(r.s.missing) != 1 {
		t.Errorf("pass = %+v, metric %v: want one missing object reported", got, testutil.ToFloat64(r.s.missing))
	}
	if len(r.store.records) != 2 {
		t.Errorf("records %v: a record without its object must not be dropped", r.store.records)
	}
	if logs := r.logs.String(); !strings.Contains(logs, "level=ERROR") || !strings.Contains(logs, "file-2") {
		t.Errorf("the missing object was not logged at error level with its file:\n%s", logs)
	}
}

func TestSweepIgnoresRecordsDeletedMeanwhile(t *testing.T) {
	r := newRig(t, 100)
	r.object("ws/a/deleted-1", 2*grace, true)
	delete(r.bucket.objects, "ws/a/deleted-1")
	r.s.store = deletedDuring{r.store}
	if got := r.s.Sweep(t.Context()); got.Missing != 0 || got.Errors != 0 {
		t.Errorf("pass = %+v: a file deleted during the check is not missing its object", got)
	}
}

func TestSweepAbortsUnfinishedUploadsPastTheGrace(t *testing.T) {
	r := newRig(t, 100)
	now := r.clock.Now()
	r.bucket.pending = []time.Time{now.Add(-2 * grace), now.Add(-grace / 2)}
	got := r.s.Sweep(t.Context())
	if got.Pending != 1 || len(r.bucket.pending) != 1 || r.removed(KindPending) != 1 {
		t.Errorf("pass = %+v, pending left %v", got, r.bucket.pending)
	}
	if !r.bucket.cutoffs[0].Equal(now.Add(-grace)) {
		t.Errorf("cutoff %v, want now - grace", r.bucket.cutoffs[0])
	}
}

func TestSweepCarriesOnPastAFailure(t *testing.T) {
	r := newRig(t, 100)
	r.store.err = errors.New("connection refused")
	r.bucket.pending = []time.Time{r.clock.Now().Add(-2 * grace)}
	got := r.s.Sweep(t.Context())
	if got.Errors == 0 || got.Pending != 1 {
		t.Errorf("pass = %+v, want errors counted and the bucket still swept", got)
	}
	if n := testutil.ToFloat64(r.s.failed.WithLabelValues(KindReservation)); n != 1 {
		t.Errorf("failed reservation sweeps = %v, want 1", n)
	}
}

func TestRunSweepsEachIntervalUntilItsContextEnds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRig(t, 10)
		r.store.expiredReservations = 100
		ctx, stop := context.WithCancel(t.Context())
		done := make(chan struct{})
		go func() { r.s.Run(ctx); close(done) }()
		// The bubble's clock: three intervals, each jittered by at most a tenth.
		time.Sleep(3*r.s.cfg.Interval + 3*r.s.cfg.Interval/10 + time.Second)
		synctest.Wait()
		if got := r.removed(KindReservation); got != 30 {
			t.Errorf("%v reservations removed in three intervals, want three passes of 10", got)
		}
		stop()
		synctest.Wait()
		select {
		case <-done:
		default:
			t.Fatal("Run still sweeps after its context ended")
		}
	})
}

// The parts of settled uploads go with their rows; a part object without a
// row goes once past the grace (a replica died between storing it and
// recording it); the parts of a pending upload stay.
func TestSweepRemovesUploadParts(t *testing.T) {
	r := newRig(t, 100)
	r.store.expiredUploads, r.store.oldUploadRows = 3, 2
	r.store.settled = map[string]bool{"upload_done": true}
	for _, p := range []files.UploadPart{
		{ID: "part_1", UploadID: "upload_done", ObjectKey: "up/w/upload_done/part_1"},
		{ID: "part_2", UploadID: "upload_done", ObjectKey: "up/w/upload_done/part_2"},
		{ID: "part_3", UploadID: "upload_live", ObjectKey: "up/w/upload_live/part_3"},
	} {
		r.store.parts = append(r.store.parts, p)
		r.bucket.objects[p.ObjectKey] = r.clock.Now().Add(-2 * grace)
	}
	r.bucket.objects["up/w/upload_live/part_orphan"] = r.clock.Now().Add(-2 * grace)
	r.bucket.objects["up/w/upload_live/part_young"] = r.clock.Now().Add(-grace / 2)
	got := r.s.Sweep(t.Context())
	if got.ExpiredUploads != 3 || got.Parts != 2 || got.OrphanParts != 1 || got.UploadRows != 2 || got.Errors != 0 {
		t.Errorf("pass = %+v, want 3 uploads expired, 2 parts, 1 part without a row and 2 old upload rows removed", got)
	}
	keys, _ := r.bucket.List(t.Context(), files.PartObjectPrefix)
	if want := []string{"up/w/upload_live/part_3", "up/w/upload_live/part_young"}; !slices.Equal(keys, want) {
		t.Errorf("bucket holds %v, want %v", keys, want)
	}
	if len(r.store.parts) != 1 || r.store.parts[0].ID != "part_3" {
		t.Errorf("part rows left: %+v, want the live upload's", r.store.parts)
	}
	if r.removed(KindPart) != 2 || r.removed(KindOrphanPart) != 1 || r.removed(KindExpired) != 3 {
		t.Errorf("metrics: %v parts, %v parts without a row, %v expired", r.removed(KindPart), r.removed(KindOrphanPart), r.removed(KindExpired))
	}
}
