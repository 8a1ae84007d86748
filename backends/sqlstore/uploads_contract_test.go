package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/aigateway/gateway/files"
	"github.com/aigateway/gateway/workspace"
)

// TestUploadContract is files.UploadStore's behaviour on every database:
// each subtest on a fresh database of each.
func TestUploadContract(t *testing.T) {
	t.Parallel()
	tests := []contractCase{
		{"Create/RoundTrip", testUploadRoundTrip},
		{"Create/Quota", testUploadQuota},
		{"Create/PendingLimit", testUploadPendingLimit},
		{"Create/Idempotent", testUploadIdempotent},
		{"Create/IdempotentRace", testUploadIdempotentRace},
		{"Create/Errors", testUploadCreateErrors},
		{"OtherWorkspace", testUploadOtherWorkspace},
		{"Parts/Limits", testUploadPartLimits},
		{"Parts/Race", testUploadPartRace},
		{"Parts/NotPending", testUploadPartsNotPending},
		{"Complete", testUploadComplete},
		{"Complete/Refusals", testUploadCompleteRefusals},
		{"Complete/Race", testUploadCompleteRace},
		{"Cancel", testUploadCancel},
		{"Expiry", testUploadExpiry},
		{"Expiry/Concurrent", testUploadExpiryConcurrent},
		{"Parts/DeleteAndKnown", testUploadDeleteKnownParts},
		{"Sweep/OldRows", testUploadSweepRows},
		{"Tally", testUploadTally},
	}
	runOnBothDatabases(t, tests)
}

// uploadTTL is the uploads' lifetime in these tests (uploads.ttl's default).
const uploadTTL = time.Hour

// uploadFixture is a store on a fake clock with user alice and her
// workspace.
func uploadFixture(t *testing.T, b backend) (*Store, *fakeClock, workspace.Workspace) {
	s := b.store(t)
	clock := useClock(s)
	mustUser(t, s, "alice")
	return s, clock, mustWorkspace(t, s, "alice", "uploads")
}

// newUpload is a pending upload of bytes in ws, made now and expiring
// uploadTTL later.
func newUpload(ws string, bytes int64, clock *fakeClock) files.UploadRecord {
	now := clock.now()
	return files.UploadRecord{
		ID:          "upload_" + uuid.NewString(),
		WorkspaceID: ws,
		KeyID:       "0123456789abcdef",
		Filename:    "datasets/train.jsonl",
		MimeType:    "application/jsonl",
		Purpose:     files.PurposeBatch, // not the default, so a lost value shows
		Bytes:       bytes,
		Status:      files.UploadPending,
		CreatedAt:   now,
		ExpiresAt:   now.Add(uploadTTL),
	}
}

func mustCreateUpload(t *testing.T, s *Store, clock *fakeClock, ws string, bytes, quota int64) files.UploadRecord {
	t.Helper()
	u, _, created, err := s.CreateUpload(testContext(t), newUpload(ws, bytes, clock), quota, 100, nil)
	if err != nil || !created {
		t.Fatalf("CreateUpload of %d bytes = created %v, %v", bytes, created, err)
	}
	return u
}

func newPart(uploadID string, bytes int64) files.UploadPart {
	return files.UploadPart{
		ID:        "part_" + uuid.NewString(),
		UploadID:  uploadID,
		Bytes:     bytes,
		ObjectKey: "uploads/" + uploadID + "/" + uuid.NewString(),
	}
}

func mustAddPart(t *testing.T, s *Store, ws, uploadID string, bytes int64) files.UploadPart {
	t.Helper()
	p := newPart(uploadID, bytes)
	if err := s.AddPart(testContext(t), ws, p, 10_000); err != nil {
		t.Fatalf("AddPart of %d bytes: %v", bytes, err)
	}
	return p
}

func wantState(t *testing.T, what string, err error, want files.UploadStatus) {
	t.Helper()
	var se *files.UploadStateError
	if !errors.As(err, &se) || se.Status != want || !errors.Is(err, files.ErrUploadNotPending) {
		t.Errorf("%s = %v, want an UploadStateError of %s", what, err, want)
	}
}

func uploadStatus(t *testing.T, s *Store, ws, id string) files.UploadStatus {
	t.Helper()
	u, _, err := s.Upload(testContext(t), ws, id)
	if err != nil {
		t.Fatalf("Upload(%s): %v", id, err)
	}
	return u.Status
}

func removableIDs(t *testing.T, s *Store) []string {
	t.Helper()
	parts, err := s.RemovableParts(testContext(t), 1000)
	if err != nil {
		t.Fatalf("RemovableParts: %v", err)
	}
	var out []string
	for _, p := range parts {
		out = append(out, p.ID)
	}
	slices.Sort(out)
	return out
}

func partIDs(parts ...files.UploadPart) []string {
	var out []string
	for _, p := range parts {
		out = append(out, p.ID)
	}
	slices.Sort(out)
	return out
}

func testUploadRoundTrip(t *testing.T, b backend) {
	s, clock, ws := uploadFixture(t, b)
	ctx := testContext(t)
	in := newUpload(ws.ID, 5000, clock)
	in.CreatedAt = in.CreatedAt.Add(123 * time.Nanosecond) // below the stored precision
	got, hash, created, err := s.CreateUpload(ctx, in, 10_000, 100, nil)
	if err != nil || !created || hash != "" {
		t.Fatalf("CreateUpload = %q, %v, %v", hash, created, err)
	}
	if got.ReservationID == "" || got.Status != files.UploadPending || got.FileID != "" {
		t.Errorf("created upload = %+v", got)
	}
	want := in
	want.CreatedAt, want.ReservationID = in.CreatedAt.Truncate(time.Microsecond), got.ReservationID
	if got != want {
		t.Errorf("CreateUpload answered\n%+v, want\n%+v", got, want)
	}
	read, parts, err := s.Upload(ctx, ws.ID, in.ID)
	if err != nil {
		t.Fatal(err)
	}
	if read != want || parts == nil || len(parts) != 0 {
		t.Errorf("Upload = %+v, %v; want %+v and no parts", read, parts, want)
	}
	var reserved int64
	rawQuery(t, s.r, &reserved, `SELECT bytes FROM quota_reservations WHERE id = $1 AND workspace_id = $2`, got.ReservationID, ws.ID)
	if reserved != 5000 {
		t.Errorf("reservation holds %d bytes, want 5000", reserved)
	}
	var exp time.Time
	rawQuery(t, s.r, timeCol{&exp}, `SELECT expires_at FROM quota_reservations WHERE id = $1`, got.ReservationID)
	if !exp.Equal(in.ExpiresAt) {
		t.Errorf("reservation expires at %v, want the upload's %v", exp, in.ExpiresAt)
	}
	if _, _, err := s.Upload(ctx, ws.ID, "upload_unknown"); !errors.Is(err, files.ErrUploadNotFound) {
		t.Errorf("Upload of an unknown id = %v, want ErrUploadNotFound", err)
	}
}

// testUploadQuota: an upload's bytes are reserved against the quota with
// files' stored bytes and other reservations, and a refusal is Reserve's.
func testUploadQuota(t *testing.T, b backend) {
	s, clock, ws := uploadFixture(t, b)
	ctx := testContext(t)
	const quota = 1000
	res, err := s.Reserve(ctx, ws.ID, 100, quota, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Commit(ctx, res, record(ws.ID, 100)); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Reserve(ctx, ws.ID, 200, quota, time.Minute); err != nil {
		t.Fatal(err)
	}
	mustCreateUpload(t, s, clock, ws.ID, 300, quota)

	refused := newUpload(ws.ID, 401, clock)
	_, _, created, err := s.CreateUpload(ctx, refused, quota, 100, nil)
	if !errors.Is(err, files.ErrQuotaExceeded) || created {
		t.Fatalf("CreateUpload over the quota = %v, %v; want ErrQuotaExceeded", created, err)
	}
	var qe *QuotaError
	if !errors.As(err, &qe) || *qe != (QuotaError{Limit: quota, Stored: 100, Reserved: 500, Requested: 401}) {
		t.Errorf("QuotaError = %+v", qe)
	}
	if _, _, err := s.Upload(ctx, ws.ID, refused.ID); !errors.Is(err, files.ErrUploadNotFound) {
		t.Errorf("refused upload: Upload = %v, want ErrUploadNotFound", err)
	}
	if n := count(t, s, `SELECT COUNT(*) FROM quota_reservations WHERE workspace_id = $1`, ws.ID); n != 2 {
		t.Errorf("%d reservations after a refusal, want 2", n)
	}
	mustCreateUpload(t, s, clock, ws.ID, 400, quota) // exactly up to the quota
	if _, err := s.Reserve(ctx, ws.ID, 1, quota, time.Minute); !errors.Is(err, files.ErrQuotaExceeded) {
		t.Errorf("Reserve beside uploads holding the rest = %v, want ErrQuotaExceeded", err)
	}
}

// testUploadPendingLimit: at most maxPending unexpired pending uploads per
// workspace; finished and expired ones do not count, nor other workspaces'.
func testUploadPendingLimit(t *testing.T, b backend) {
	s, clock, ws := uploadFixture(t, b)
	ctx := testContext(t)
	const maxPending = 2
	create := func(ws string) (files.UploadRecord, error) {
		u, _, _, err := s.CreateUpload(ctx, newUpload(ws, 10, clock), 1<<40, maxPending, nil)
		return u, err
	}
	first, err := create(ws.ID)
	if err != nil {
		t.Fatal(err)
	}
	clock.advance(time.Minute)
	if _, err := create(ws.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := create(ws.ID); !errors.Is(err, files.ErrTooManyPending) {
		t.Fatalf("third pending upload: %v, want ErrTooManyPending", err)
	}
	if n := count(t, s, `SELECT COUNT(*) FROM quota_reservations WHERE workspace_id = $1`, ws.ID); n != 2 {
		t.Errorf("%d reservations after a refusal, want 2", n)
	}
	other := mustWorkspace(t, s, "alice", "other")
	if _, err := create(other.ID); err != nil {
		t.Errorf("another workspace's first upload: %v", err)
	}
	if _, err := s.CancelUpload(ctx, ws.ID, first.ID); err != nil {
		t.Fatal(err)
	}
	clock.advance(time.Minute)
	third, err := create(ws.ID)
	if err != nil {
		t.Fatalf("after a cancel: %v", err)
	}
	// The second expires now; it counts no more, before ExpireUploads too.
	clock.advance(uploadTTL - time.Minute)
	if _, err := create(ws.ID); err != nil {
		t.Errorf("beside an upload past its time: %v", err)
	}
	if _, err := create(ws.ID); !errors.Is(err, files.ErrTooManyPending) {
		t.Errorf("again at the limit: %v, want ErrTooManyPending", err)
	}
	if st := uploadStatus(t, s, ws.ID, third.ID); st != files.UploadPending {
		t.Errorf("third upload is %s", st)
	}
}

func testUploadIdempotent(t *testing.T, b backend) {
	s, clock, ws := uploadFixture(t, b)
	ctx := testContext(t)
	idem := &files.UploadIdempotency{UserID: "alice", Key: "retry-1", RequestHash: "hash-a"}
	first, hash, created, err := s.CreateUpload(ctx, newUpload(ws.ID, 100, clock), 1000, 100, idem)
	if err != nil || !created || hash != "hash-a" {
		t.Fatalf("first CreateUpload = %q, %v, %v", hash, created, err)
	}
	clock.advance(time.Minute)

	retry := newUpload(ws.ID, 901, clock) // another id; it would not even fit
	got, hash, created, err := s.CreateUpload(ctx, retry, 1000, 100,
		&files.UploadIdempotency{UserID: "alice", Key: "retry-1", RequestHash: "hash-b"})
	if err != nil || created {
		t.Fatalf("replay: created %v, %v", created, err)
	}
	if got != first || hash != "hash-a" {
		t.Errorf("replay = %+v with hash %q, want %+v with hash-a", got, hash, first)
	}
	if n := count(t, s, `SELECT COUNT(*) FROM uploads WHERE workspace_id = $1`, ws.ID); n != 1 {
		t.Errorf("%d uploads after a replay, want 1", n)
	}
	if n := count(t, s, `SELECT COUNT(*) FROM quota_reservations WHERE workspace_id = $1`, ws.ID); n != 1 {
		t.Errorf("%d reservations after a replay, want 1", n)
	}

	// A replay answers the upload as it is now.
	if _, err := s.CancelUpload(ctx, ws.ID, first.ID); err != nil {
		t.Fatal(err)
	}
	got, _, _, err = s.CreateUpload(ctx, newUpload(ws.ID, 100, clock), 1000, 100, idem)
	if err != nil || got.ID != first.ID || got.Status != files.UploadCancelled {
		t.Errorf("replay after a cancel = %+v, %v; want the cancelled upload", got, err)
	}

	// Another user's key of the same name is another key.
	mustUser(t, s, "bob")
	bobs := mustWorkspace(t, s, "bob", "uploads")
	if _, _, created, err := s.CreateUpload(ctx, newUpload(bobs.ID, 100, clock), 1000, 100,
		&files.UploadIdempotency{UserID: "bob", Key: "retry-1", RequestHash: "hash-a"}); err != nil || !created {
		t.Errorf("bob's key of alice's name: created %v, %v", created, err)
	}

	// A refused creation keeps no claim: the retry is decided afresh.
	idem2 := &files.UploadIdempotency{UserID: "alice", Key: "retry-2", RequestHash: "hash-c"}
	if _, _, _, err := s.CreateUpload(ctx, newUpload(ws.ID, 2000, clock), 1000, 100, idem2); !errors.Is(err, files.ErrQuotaExceeded) {
		t.Fatalf("over the quota: %v", err)
	}
	if _, _, created, err := s.CreateUpload(ctx, newUpload(ws.ID, 2000, clock), 5000, 100, idem2); err != nil || !created {
		t.Errorf("retry after a refusal: created %v, %v", created, err)
	}

	// After the key's lifetime it makes a new upload.
	clock.advance(workspace.IdempotencyTTL)
	fresh := newUpload(ws.ID, 100, clock)
	got, hash, created, err = s.CreateUpload(ctx, fresh, 1000, 100,
		&files.UploadIdempotency{UserID: "alice", Key: "retry-1", RequestHash: "hash-d"})
	if err != nil || !created || got.ID != fresh.ID || hash != "hash-d" {
		t.Errorf("after the key's lifetime: %+v, %q, created %v, %v", got, hash, created, err)
	}
}

// testUploadIdempotentRace: concurrent creations with one key make one
// upload, and every call answers it.
func testUploadIdempotentRace(t *testing.T, b backend) {
	s, clock, ws := uploadFixture(t, b)
	const n = 12
	type outcome struct {
		got     files.UploadRecord
		created bool
		err     error
	}
	out := make([]outcome, n)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			u := newUpload(ws.ID, 100, clock)
			<-start
			got, _, created, err := s.CreateUpload(testContext(t), u, 1000, 100,
				&files.UploadIdempotency{UserID: "alice", Key: "same", RequestHash: "h"})
			out[i] = outcome{got, created, err}
		})
	}
	close(start)
	wg.Wait()
	var winner string
	made := 0
	for i, o := range out {
		if o.err != nil {
			t.Fatalf("call %d: %v", i, o.err)
		}
		if o.created {
			made++
			winner = o.got.ID
		}
	}
	if made != 1 {
		t.Fatalf("%d calls created an upload, want 1", made)
	}
	for i, o := range out {
		if o.got.ID != winner {
			t.Errorf("call %d answered %s, want %s", i, o.got.ID, winner)
		}
	}
	if c := count(t, s, `SELECT COUNT(*) FROM uploads`); c != 1 {
		t.Errorf("%d uploads, want 1", c)
	}
	if c := count(t, s, `SELECT COUNT(*) FROM quota_reservations`); c != 1 {
		t.Errorf("%d reservations, want 1", c)
	}
}

func testUploadCreateErrors(t *testing.T, b backend) {
	s, clock, ws := uploadFixture(t, b)
	ctx := testContext(t)
	taken := mustCreateUpload(t, s, clock, ws.ID, 10, 1000)
	tests := []struct {
		name string
		edit func(u *files.UploadRecord)
		idem *files.UploadIdempotency
		want error
	}{
		{"unknown workspace", func(u *files.UploadRecord) { u.WorkspaceID = uuid.NewString() }, nil, workspace.ErrNotFound},
		{"malformed workspace id", func(u *files.UploadRecord) { u.WorkspaceID = "uploads" }, nil, workspace.ErrNotFound},
		{"reused id", func(u *files.UploadRecord) { u.ID = taken.ID }, nil, ErrConflict},
		{"no id", func(u *files.UploadRecord) { u.ID = "" }, nil, ErrInvalidArgument},
		{"negative bytes", func(u *files.UploadRecord) { u.Bytes = -1 }, nil, ErrInvalidArgument},
		{"already expired", func(u *files.UploadRecord) { u.ExpiresAt = clock.now() }, nil, ErrInvalidArgument},
		{"idempotency without a key", func(*files.UploadRecord) {}, &files.UploadIdempotency{UserID: "alice"}, ErrInvalidArgument},
		{"idempotency of an unknown user", func(*files.UploadRecord) {}, &files.UploadIdempotency{UserID: "nobody", Key: "k"}, ErrUserNotFound},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			u := newUpload(ws.ID, 10, clock)
			tt.edit(&u)
			if _, _, _, err := s.CreateUpload(ctx, u, 1000, 100, tt.idem); !errors.Is(err, tt.want) {
				t.Errorf("CreateUpload = %v, want %v", err, tt.want)
			}
		})
	}
	if c := count(t, s, `SELECT COUNT(*) FROM uploads`); c != 1 {
		t.Errorf("%d uploads after refusals, want 1", c)
	}
	if c := count(t, s, `SELECT COUNT(*) FROM quota_reservations`); c != 1 {
		t.Errorf("%d reservations after refusals, want 1", c)
	}
}

// testUploadOtherWorkspace: another workspace's upload, the same user's or
// another's, is not found by any method, and nothing changes.
func testUploadOtherWorkspace(t *testing.T, b backend) {
	s, clock, ws := uploadFixture(t, b)
	ctx := testContext(t)
	u := mustCreateUpload(t, s, clock, ws.ID, 100, 1000)
	mustAddPart(t, s, ws.ID, u.ID, 10)
	mustUser(t, s, "bob")
	others := []struct{ name, id string }{
		{"same user's other workspace", mustWorkspace(t, s, "alice", "second").ID},
		{"another user's workspace", mustWorkspace(t, s, "bob", "uploads").ID},
		{"unknown workspace", uuid.NewString()},
		{"not a UUID", "not-a-uuid"},
		{"a character short", upperUUID(ws.ID)[:35]},
	}
	for _, o := range others {
		other := o.id
		t.Run(o.name, func(t *testing.T) {
			if _, _, err := s.Upload(ctx, other, u.ID); !errors.Is(err, files.ErrUploadNotFound) {
				t.Errorf("Upload = %v", err)
			}
			if err := s.AddPart(ctx, other, newPart(u.ID, 1), 100); !errors.Is(err, files.ErrUploadNotFound) {
				t.Errorf("AddPart = %v", err)
			}
			if err := s.CompleteUpload(ctx, other, u.ID, record(other, 10)); !errors.Is(err, files.ErrUploadNotFound) {
				t.Errorf("CompleteUpload = %v", err)
			}
			if err := s.CompleteUpload(ctx, other, u.ID, record("", 10)); !errors.Is(err, files.ErrUploadNotFound) {
				t.Errorf("CompleteUpload = %v", err)
			}
			if _, err := s.CancelUpload(ctx, other, u.ID); !errors.Is(err, files.ErrUploadNotFound) {
				t.Errorf("CancelUpload = %v", err)
			}
		})
	}
	// The workspace id in any case is the workspace.
	got, parts, err := s.Upload(ctx, upperUUID(ws.ID), u.ID)
	if err != nil || got.Status != files.UploadPending || len(parts) != 1 {
		t.Errorf("Upload by the upper-case workspace id = %+v, %d parts, %v", got, len(parts), err)
	}
}

// testUploadPartLimits: parts may add up to the upload's bytes and
// number at most maxParts; they are listed in the order stored.
func testUploadPartLimits(t *testing.T, b backend) {
	s, clock, ws := uploadFixture(t, b)
	ctx := testContext(t)
	u := mustCreateUpload(t, s, clock, ws.ID, 100, 1000)
	const maxParts = 3
	var stored []files.UploadPart
	add := func(bytes int64) error {
		clock.advance(time.Second)
		p := newPart(u.ID, bytes)
		p.CreatedAt = clock.now()
		err := s.AddPart(ctx, ws.ID, p, maxParts)
		if err == nil {
			stored = append(stored, p)
		}
		return err
	}
	for _, n := range []int64{40, 40} {
		if err := add(n); err != nil {
			t.Fatalf("part of %d: %v", n, err)
		}
	}
	if err := add(21); !errors.Is(err, files.ErrPartsExceedUpload) {
		t.Errorf("part passing the bytes = %v, want ErrPartsExceedUpload", err)
	}
	if err := add(1<<63 - 1); !errors.Is(err, files.ErrPartsExceedUpload) {
		t.Errorf("huge part = %v, want ErrPartsExceedUpload", err)
	}
	if err := add(20); err != nil {
		t.Fatalf("part up to the bytes: %v", err)
	}
	if err := add(0); !errors.Is(err, files.ErrPartsExceedUpload) {
		t.Errorf("part past maxParts = %v, want ErrPartsExceedUpload", err)
	}
	if err := s.AddPart(ctx, ws.ID, files.UploadPart{ID: stored[0].ID, UploadID: u.ID}, 100); !errors.Is(err, ErrConflict) {
		t.Errorf("reused part id = %v, want ErrConflict", err)
	}
	if err := s.AddPart(ctx, ws.ID, newPart(u.ID, -1), 100); !errors.Is(err, ErrInvalidArgument) {
		t.Errorf("negative part = %v, want ErrInvalidArgument", err)
	}
	if err := s.AddPart(ctx, ws.ID, newPart("upload_unknown", 1), 100); !errors.Is(err, files.ErrUploadNotFound) {
		t.Errorf("part of an unknown upload = %v, want ErrUploadNotFound", err)
	}
	_, parts, err := s.Upload(ctx, ws.ID, u.ID)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(parts, stored) {
		t.Errorf("parts =\n%+v\nwant\n%+v", parts, stored)
	}
}

// testUploadPartRace: parts sent at once never take an upload past its
// bytes or its most parts.
func testUploadPartRace(t *testing.T, b backend) {
	s, clock, ws := uploadFixture(t, b)
	race := func(t *testing.T, bytes int64, maxParts int, part int64, n int) (ok int) {
		u := mustCreateUpload(t, s, clock, ws.ID, bytes, 1<<40)
		errs := make([]error, n)
		start := make(chan struct{})
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() {
				<-start
				errs[i] = s.AddPart(testContext(t), ws.ID, newPart(u.ID, part), maxParts)
			})
		}
		close(start)
		wg.Wait()
		for i, err := range errs {
			switch {
			case err == nil:
				ok++
			case !errors.Is(err, files.ErrPartsExceedUpload):
				t.Errorf("part %d: %v", i, err)
			}
		}
		_, parts, err := s.Upload(testContext(t), ws.ID, u.ID)
		if err != nil {
			t.Fatal(err)
		}
		var sum int64
		for _, p := range parts {
			sum += p.Bytes
		}
		if len(parts) != ok || sum > bytes || len(parts) > maxParts {
			t.Errorf("%d parts of %d bytes stored, %d accepted; upload of %d bytes, at most %d parts",
				len(parts), sum, ok, bytes, maxParts)
		}
		return ok
	}
	t.Run("bytes", func(t *testing.T) {
		if ok := race(t, 1000, 10_000, 100, 25); ok != 10 {
			t.Errorf("%d parts of 100 accepted in an upload of 1000 bytes, want 10", ok)
		}
	})
	t.Run("count", func(t *testing.T) {
		if ok := race(t, 1000, 4, 1, 25); ok != 4 {
			t.Errorf("%d parts accepted with at most 4, want 4", ok)
		}
	})
}

// testUploadPartsNotPending: a completed, cancelled or expired upload
// takes no part.
func testUploadPartsNotPending(t *testing.T, b backend) {
	s, clock, ws := uploadFixture(t, b)
	ctx := testContext(t)
	completed := mustCreateUpload(t, s, clock, ws.ID, 10, 1000)
	mustAddPart(t, s, ws.ID, completed.ID, 10)
	if err := s.CompleteUpload(ctx, ws.ID, completed.ID, record(ws.ID, 10)); err != nil {
		t.Fatal(err)
	}
	cancelled := mustCreateUpload(t, s, clock, ws.ID, 10, 1000)
	if _, err := s.CancelUpload(ctx, ws.ID, cancelled.ID); err != nil {
		t.Fatal(err)
	}
	wantState(t, "AddPart to a completed upload", s.AddPart(ctx, ws.ID, newPart(completed.ID, 0), 100), files.UploadCompleted)
	wantState(t, "AddPart to a cancelled upload", s.AddPart(ctx, ws.ID, newPart(cancelled.ID, 1), 100), files.UploadCancelled)

	expiring := mustCreateUpload(t, s, clock, ws.ID, 10, 1000)
	clock.advance(uploadTTL - time.Microsecond)
	mustAddPart(t, s, ws.ID, expiring.ID, 1) // its last microsecond
	clock.advance(time.Microsecond)
	wantState(t, "AddPart at its expiry", s.AddPart(ctx, ws.ID, newPart(expiring.ID, 1), 100), files.UploadExpired)
	if n, err := s.ExpireUploads(ctx, 10); err != nil || n != 1 {
		t.Fatalf("ExpireUploads = %d, %v; want 1", n, err)
	}
	wantState(t, "AddPart to an expired upload", s.AddPart(ctx, ws.ID, newPart(expiring.ID, 1), 100), files.UploadExpired)
	_, parts, err := s.Upload(ctx, ws.ID, expiring.ID)
	if err != nil || len(parts) != 1 {
		t.Errorf("expired upload holds %d parts, %v; want the 1 stored in time", len(parts), err)
	}
}

// testUploadComplete: the file is recorded and charged by its size, the
// reservation is gone, and the parts become removable.
func testUploadComplete(t *testing.T, b backend) {
	s, clock, ws := uploadFixture(t, b)
	ctx := testContext(t)
	const quota = 1000
	u := mustCreateUpload(t, s, clock, ws.ID, 600, quota)
	other := mustCreateUpload(t, s, clock, ws.ID, 100, quota)
	otherPart := mustAddPart(t, s, ws.ID, other.ID, 50)
	p1 := mustAddPart(t, s, ws.ID, u.ID, 400)
	p2 := mustAddPart(t, s, ws.ID, u.ID, 200)
	if ids := removableIDs(t, s); len(ids) != 0 {
		t.Errorf("removable parts of pending uploads: %v", ids)
	}
	rec := record(ws.ID, 600)
	if err := s.CompleteUpload(ctx, ws.ID, u.ID, rec); err != nil {
		t.Fatalf("CompleteUpload: %v", err)
	}
	got, err := s.FileByID(ctx, ws.ID, rec.ID)
	if err != nil {
		t.Fatalf("FileByID of the completed upload's file: %v", err)
	}
	if want := rec; got != want {
		t.Errorf("file = %+v, want %+v", got, want)
	}
	if n, err := s.StoredBytes(ctx, ws.ID); err != nil || n != 600 {
		t.Errorf("StoredBytes = %d, %v; want 600", n, err)
	}
	if n := count(t, s, `SELECT COUNT(*) FROM quota_reservations WHERE id = $1`, u.ReservationID); n != 0 {
		t.Error("the upload's reservation is still there")
	}
	up, parts, err := s.Upload(ctx, ws.ID, u.ID)
	if err != nil || up.Status != files.UploadCompleted || up.FileID != rec.ID || len(parts) != 2 {
		t.Errorf("Upload after completion = %+v, %d parts, %v", up, len(parts), err)
	}
	if ids, want := removableIDs(t, s), partIDs(p1, p2); !slices.Equal(ids, want) {
		t.Errorf("removable parts = %v, want the completed upload's %v (not %s)", ids, want, otherPart.ID)
	}
	// 600 stored + 100 still reserved by the other upload: 300 left.
	if _, err := s.Reserve(ctx, ws.ID, 301, quota, time.Minute); !errors.Is(err, files.ErrQuotaExceeded) {
		t.Errorf("Reserve(301) = %v, want ErrQuotaExceeded", err)
	}
	if _, err := s.Reserve(ctx, ws.ID, 300, quota, time.Minute); err != nil {
		t.Errorf("Reserve(300): %v", err)
	}
	wantState(t, "completing twice", s.CompleteUpload(ctx, ws.ID, u.ID, record(ws.ID, 600)), files.UploadCompleted)
	wantState(t, "cancelling a completed upload", func() error { _, err := s.CancelUpload(ctx, ws.ID, u.ID); return err }(), files.UploadCompleted)
	if n := count(t, s, `SELECT COUNT(*) FROM files WHERE workspace_id = $1`, ws.ID); n != 1 {
		t.Errorf("%d files, want 1", n)
	}
}

// testUploadCompleteRefusals: a refused completion changes nothing and
// leaves the upload pending.
func testUploadCompleteRefusals(t *testing.T, b backend) {
	s, clock, ws := uploadFixture(t, b)
	ctx := testContext(t)
	u := mustCreateUpload(t, s, clock, ws.ID, 100, 1000)
	mustAddPart(t, s, ws.ID, u.ID, 100)
	existing, err := s.Reserve(ctx, ws.ID, 10, 1000, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	taken := record(ws.ID, 10)
	if err := s.Commit(ctx, existing, taken); err != nil {
		t.Fatal(err)
	}
	reused := record(ws.ID, 100)
	reused.ID = taken.ID
	tests := []struct {
		name string
		rec  files.Record
		want error
	}{
		{"larger than reserved", record(ws.ID, 101), files.ErrQuotaExceeded},
		{"reused file id", reused, ErrConflict},
		{"no file id", record(ws.ID, 100), ErrInvalidArgument},
		{"record of another workspace", record(uuid.NewString(), 100), ErrInvalidArgument},
	}
	tests[2].rec.ID = ""
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := s.CompleteUpload(ctx, ws.ID, u.ID, tt.rec); !errors.Is(err, tt.want) {
				t.Errorf("CompleteUpload = %v, want %v", err, tt.want)
			}
		})
	}
	if st := uploadStatus(t, s, ws.ID, u.ID); st != files.UploadPending {
		t.Errorf("upload is %s after refusals, want pending", st)
	}
	if n, _ := s.StoredBytes(ctx, ws.ID); n != 10 {
		t.Errorf("StoredBytes = %d after refusals, want 10", n)
	}
	if n := count(t, s, `SELECT COUNT(*) FROM quota_reservations WHERE id = $1`, u.ReservationID); n != 1 {
		t.Error("a refused completion released the reservation")
	}
	if ids := removableIDs(t, s); len(ids) != 0 {
		t.Errorf("removable parts after refusals: %v", ids)
	}
	if err := s.CompleteUpload(ctx, ws.ID, u.ID, record(ws.ID, 100)); err != nil {
		t.Errorf("CompleteUpload after refusals: %v", err)
	}
}

// testUploadCompleteRace: of concurrent completions exactly one makes its
// file; the others are told the upload is completed.
func testUploadCompleteRace(t *testing.T, b backend) {
	s, clock, ws := uploadFixture(t, b)
	u := mustCreateUpload(t, s, clock, ws.ID, 100, 1000)
	mustAddPart(t, s, ws.ID, u.ID, 100)
	const n = 10
	errs := make([]error, n)
	recs := make([]files.Record, n)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range n {
		recs[i] = record(ws.ID, 100)
		wg.Go(func() {
			<-start
			errs[i] = s.CompleteUpload(testContext(t), ws.ID, u.ID, recs[i])
		})
	}
	close(start)
	wg.Wait()
	winner := -1
	for i, err := range errs {
		if err == nil {
			if winner >= 0 {
				t.Errorf("completions %d and %d both won", winner, i)
			}
			winner = i
			continue
		}
		wantState(t, fmt.Sprintf("completion %d", i), err, files.UploadCompleted)
	}
	if winner < 0 {
		t.Fatal("no completion won")
	}
	if c := count(t, s, `SELECT COUNT(*) FROM files WHERE workspace_id = $1`, ws.ID); c != 1 {
		t.Errorf("%d files, want 1", c)
	}
	up, _, err := s.Upload(testContext(t), ws.ID, u.ID)
	if err != nil || up.FileID != recs[winner].ID {
		t.Errorf("upload's file = %q, %v; want the winner's %s", up.FileID, err, recs[winner].ID)
	}
	if stored, _ := s.StoredBytes(testContext(t), ws.ID); stored != 100 {
		t.Errorf("StoredBytes = %d, want 100", stored)
	}
}

// testUploadCancel: the reservation is released, so its quota is free
// again; the parts become removable; the workspace may then be deleted.
func testUploadCancel(t *testing.T, b backend) {
	s, clock, ws := uploadFixture(t, b)
	ctx := testContext(t)
	const quota = 1000
	u := mustCreateUpload(t, s, clock, ws.ID, 800, quota)
	p := mustAddPart(t, s, ws.ID, u.ID, 300)
	if _, err := s.Reserve(ctx, ws.ID, 201, quota, time.Minute); !errors.Is(err, files.ErrQuotaExceeded) {
		t.Fatalf("Reserve beside the upload = %v, want ErrQuotaExceeded", err)
	}
	got, err := s.CancelUpload(ctx, ws.ID, u.ID)
	if err != nil {
		t.Fatal(err)
	}
	want := u
	want.Status = files.UploadCancelled
	if got != want {
		t.Errorf("CancelUpload = %+v, want %+v", got, want)
	}
	if st := uploadStatus(t, s, ws.ID, u.ID); st != files.UploadCancelled {
		t.Errorf("upload is %s, want cancelled", st)
	}
	res, err := s.Reserve(ctx, ws.ID, quota, quota, time.Minute)
	if err != nil {
		t.Fatalf("Reserve of the whole quota after the cancel: %v", err)
	}
	if err := s.Release(ctx, res); err != nil {
		t.Fatal(err)
	}
	if ids := removableIDs(t, s); !slices.Equal(ids, []string{p.ID}) {
		t.Errorf("removable parts = %v, want [%s]", ids, p.ID)
	}
	_, err = s.CancelUpload(ctx, ws.ID, u.ID)
	wantState(t, "cancelling twice", err, files.UploadCancelled)
	wantState(t, "completing a cancelled upload", s.CompleteUpload(ctx, ws.ID, u.ID, record(ws.ID, 300)), files.UploadCancelled)
	if _, err := s.CancelUpload(ctx, ws.ID, "upload_unknown"); !errors.Is(err, files.ErrUploadNotFound) {
		t.Errorf("cancelling an unknown upload = %v", err)
	}
	// A finished upload's row does not hold its workspace.
	if err := s.DeleteWorkspace(ctx, "alice", workspace.Ref{ID: ws.ID}); err != nil {
		t.Errorf("DeleteWorkspace after its upload was cancelled: %v", err)
	}
}

// testUploadExpiry: past its time an upload is answered expired, its
// reservation no longer counts, and ExpireUploads settles it.
func testUploadExpiry(t *testing.T, b backend) {
	s, clock, ws := uploadFixture(t, b)
	ctx := testContext(t)
	const quota = 1000
	u := mustCreateUpload(t, s, clock, ws.ID, 800, quota)
	p := mustAddPart(t, s, ws.ID, u.ID, 300)
	clock.advance(time.Minute)
	later := mustCreateUpload(t, s, clock, ws.ID, 100, quota)
	// A reservation renewed past its upload's time is released by the expiry.
	clock.advance(uploadTTL - 2*time.Minute)
	if renewed, err := s.Renew(ctx, []string{later.ReservationID}, 2*uploadTTL); err != nil || len(renewed) != 1 {
		t.Fatalf("Renew = %v, %v", renewed, err)
	}
	clock.advance(time.Minute) // u's time

	if st := uploadStatus(t, s, ws.ID, u.ID); st != files.UploadExpired {
		t.Errorf("upload past its time is %s, want expired", st)
	}
	wantState(t, "completing an expired upload", s.CompleteUpload(ctx, ws.ID, u.ID, record(ws.ID, 800)), files.UploadExpired)
	_, err := s.CancelUpload(ctx, ws.ID, u.ID)
	wantState(t, "cancelling an expired upload", err, files.UploadExpired)
	if ids := removableIDs(t, s); len(ids) != 0 {
		t.Errorf("parts removable before ExpireUploads: %v", ids)
	}
	res, err := s.Reserve(ctx, ws.ID, 900, quota, time.Minute)
	if err != nil {
		t.Fatalf("Reserve beside an expired upload: %v", err)
	}
	if err := s.Release(ctx, res); err != nil {
		t.Fatal(err)
	}

	if n, err := s.ExpireUploads(ctx, 10); err != nil || n != 1 {
		t.Fatalf("ExpireUploads = %d, %v; want 1", n, err)
	}
	var status string
	rawQuery(t, s.r, &status, `SELECT status FROM uploads WHERE id = $1`, u.ID)
	if status != string(files.UploadExpired) {
		t.Errorf("stored status %q, want expired", status)
	}
	if ids := removableIDs(t, s); !slices.Equal(ids, []string{p.ID}) {
		t.Errorf("removable parts = %v, want [%s]", ids, p.ID)
	}
	if n, err := s.ExpireUploads(ctx, 10); err != nil || n != 0 {
		t.Errorf("second ExpireUploads = %d, %v; want 0", n, err)
	}

	clock.advance(time.Minute) // later's time; its reservation was renewed
	if n, err := s.ExpireUploads(ctx, 10); err != nil || n != 1 {
		t.Fatalf("ExpireUploads = %d, %v; want 1", n, err)
	}
	if n := count(t, s, `SELECT COUNT(*) FROM quota_reservations WHERE id = $1`, later.ReservationID); n != 0 {
		t.Error("the renewed reservation of an expired upload is still there")
	}
	if _, err := s.Reserve(ctx, ws.ID, quota, quota, time.Minute); err != nil {
		t.Errorf("Reserve of the whole quota after both expired: %v", err)
	}
}

// testUploadExpiryConcurrent: ExpireUploads takes at most limit uploads,
// and calls on every replica at once expire each upload once.
func testUploadExpiryConcurrent(t *testing.T, b backend) {
	s, clock, ws := uploadFixture(t, b)
	ctx := testContext(t)
	const n = 9
	for range n {
		u := mustCreateUpload(t, s, clock, ws.ID, 10, 1<<20)
		mustAddPart(t, s, ws.ID, u.ID, 5)
	}
	clock.advance(time.Minute)
	pending := mustCreateUpload(t, s, clock, ws.ID, 10, 1<<20)
	clock.advance(uploadTTL - time.Minute) // the others' time, not pending's
	if got, err := s.ExpireUploads(ctx, 2); err != nil || got != 2 {
		t.Fatalf("ExpireUploads(2) = %d, %v; want 2", got, err)
	}
	const callers = 4
	got := make([]int, callers)
	errs := make([]error, callers)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range callers {
		wg.Go(func() {
			<-start
			got[i], errs[i] = s.ExpireUploads(testContext(t), 100)
		})
	}
	close(start)
	wg.Wait()
	total := 0
	for i := range callers {
		if errs[i] != nil {
			t.Errorf("caller %d: %v", i, errs[i])
		}
		total += got[i]
	}
	if total != n-2 {
		t.Errorf("concurrent ExpireUploads expired %d, want %d", total, n-2)
	}
	if ids := removableIDs(t, s); len(ids) != n {
		t.Errorf("%d removable parts, want %d", len(ids), n)
	}
	if st := uploadStatus(t, s, ws.ID, pending.ID); st != files.UploadPending {
		t.Errorf("the upload before its time is %s, want pending", st)
	}
	if c := count(t, s, `SELECT COUNT(*) FROM uploads WHERE status = 'pending'`); c != 1 {
		t.Errorf("%d uploads stored as pending, want 1", c)
	}
}

// testUploadDeleteKnownParts: the sweeper's side: parts known by object
// key until their rows are deleted, and only settled parts deleted.
func testUploadDeleteKnownParts(t *testing.T, b backend) {
	s, clock, ws := uploadFixture(t, b)
	ctx := testContext(t)
	done := mustCreateUpload(t, s, clock, ws.ID, 100, 1000)
	d1 := mustAddPart(t, s, ws.ID, done.ID, 60)
	d2 := mustAddPart(t, s, ws.ID, done.ID, 40)
	live := mustCreateUpload(t, s, clock, ws.ID, 100, 1000)
	l1 := mustAddPart(t, s, ws.ID, live.ID, 10)
	if _, err := s.CancelUpload(ctx, ws.ID, done.ID); err != nil {
		t.Fatal(err)
	}

	// More keys than one statement takes.
	keys := []string{d1.ObjectKey, d2.ObjectKey, l1.ObjectKey}
	for i := range 2 * renewBatch {
		keys = append(keys, fmt.Sprintf("uploads/unknown/%d", i))
	}
	known, err := s.KnownParts(ctx, keys)
	if err != nil {
		t.Fatal(err)
	}
	if want := map[string]bool{d1.ObjectKey: true, d2.ObjectKey: true, l1.ObjectKey: true}; !reflect.DeepEqual(known, want) {
		t.Errorf("KnownParts = %v, want %v", known, want)
	}

	limited, err := s.RemovableParts(ctx, 1)
	if err != nil || len(limited) != 1 {
		t.Fatalf("RemovableParts(1) = %v, %v", limited, err)
	}
	if limited[0].UploadID != done.ID || limited[0].ObjectKey == "" || limited[0].Bytes == 0 || limited[0].CreatedAt.IsZero() {
		t.Errorf("removable part = %+v", limited[0])
	}
	if err := s.DeleteParts(ctx, []string{d1.ID, d2.ID, l1.ID, "part_missing"}); err != nil {
		t.Fatalf("DeleteParts: %v", err)
	}
	if ids := removableIDs(t, s); len(ids) != 0 {
		t.Errorf("removable parts after DeleteParts: %v", ids)
	}
	known, err = s.KnownParts(ctx, keys[:3])
	if err != nil {
		t.Fatal(err)
	}
	if want := map[string]bool{l1.ObjectKey: true}; !reflect.DeepEqual(known, want) {
		t.Errorf("KnownParts after DeleteParts = %v, want only the pending upload's part", known)
	}
	_, parts, err := s.Upload(ctx, ws.ID, live.ID)
	if err != nil || len(parts) != 1 {
		t.Errorf("pending upload's parts after DeleteParts: %d, %v; want its 1", len(parts), err)
	}
	if err := s.DeleteParts(ctx, nil); err != nil {
		t.Errorf("DeleteParts(nil): %v", err)
	}
}

// BenchmarkUploadStore measures the metadata cost of resumable uploads
// against the one-request upload's in the same run: ReserveCommit is a
// POST /files (Reserve, then Commit), OnePart a resumable upload of one
// part (CreateUpload, AddPart, CompleteUpload), and AddPart one part added
// to an upload already holding 0 or 9,000 parts, which costs the same
// since the upload row keeps the parts' sums.
func BenchmarkUploadStore(b *testing.B) {
	const quota = 1 << 62
	for _, be := range []struct {
		name string
		get  func(testing.TB) backend
	}{{"sqlite", func(testing.TB) backend { return sqliteBackend() }}, {"postgres", postgresBackend}} {
		b.Run(be.name, func(b *testing.B) {
			s := be.get(b).store(b)
			ctx := testContext(b)
			if err := s.EnsureUser(ctx, "alice"); err != nil {
				b.Fatal(err)
			}
			ws := newWorkspace("alice", "bench")
			if _, err := s.CreateWorkspace(ctx, ws, nil); err != nil {
				b.Fatal(err)
			}
			clock := &fakeClock{t: time.Now().UTC()}
			b.Run("ReserveCommit", func(b *testing.B) {
				for b.Loop() {
					res, err := s.Reserve(ctx, ws.ID, 10, quota, time.Minute)
					if err != nil {
						b.Fatal(err)
					}
					if err := s.Commit(ctx, res, record(ws.ID, 10)); err != nil {
						b.Fatal(err)
					}
				}
			})
			b.Run("OnePart", func(b *testing.B) {
				for b.Loop() {
					u, _, _, err := s.CreateUpload(ctx, newUpload(ws.ID, 10, clock), quota, 100, nil)
					if err != nil {
						b.Fatal(err)
					}
					if err := s.AddPart(ctx, ws.ID, newPart(u.ID, 10), 10_000); err != nil {
						b.Fatal(err)
					}
					if err := s.CompleteUpload(ctx, ws.ID, u.ID, record(ws.ID, 10)); err != nil {
						b.Fatal(err)
					}
				}
			})
			for _, held := range []int{0, 9000} {
				b.Run(fmt.Sprintf("AddPart/held=%d", held), func(b *testing.B) {
					u, _, _, err := s.CreateUpload(ctx, newUpload(ws.ID, 1<<40, clock), quota, 100, nil)
					if err != nil {
						b.Fatal(err)
					}
					if err := holdParts(ctx, s, u.ID, held); err != nil {
						b.Fatal(err)
					}
					for b.Loop() {
						if err := s.AddPart(ctx, ws.ID, newPart(u.ID, 1), 1<<30); err != nil {
							b.Fatal(err)
						}
					}
					if _, err := s.CancelUpload(ctx, ws.ID, u.ID); err != nil {
						b.Fatal(err)
					}
				})
			}
		})
	}
}

// holdParts gives the upload n parts of one byte in one transaction.
func holdParts(ctx context.Context, s *Store, uploadID string, n int) error {
	return s.inTx(ctx, func(tx *sql.Tx) error {
		for i := range n {
			p := newPart(uploadID, 1)
			if _, err := tx.ExecContext(ctx, `INSERT INTO upload_parts (id, upload_id, seq, bytes, object_key, created_at)
				VALUES ($1, $2, $3, $4, $5, $6)`, p.ID, uploadID, i+1, p.Bytes, p.ObjectKey, s.d.ts(micro(time.Now()))); err != nil {
				return err
			}
		}
		_, err := tx.ExecContext(ctx, `UPDATE uploads SET parts_count = $2, parts_bytes = $3 WHERE id = $1`, uploadID, n, int64(n))
		return err
	})
}

// testUploadSweepRows: a settled upload's row goes files.UploadRowRetention
// after its time, once its parts are gone; a pending one, or one whose
// parts remain, stays; the completed upload's file stays.
func testUploadSweepRows(t *testing.T, b backend) {
	s, clock, ws := uploadFixture(t, b)
	ctx := testContext(t)
	done := mustCreateUpload(t, s, clock, ws.ID, 300, 10_000)
	p := mustAddPart(t, s, ws.ID, done.ID, 300)
	rec := record(ws.ID, 300)
	if err := s.CompleteUpload(ctx, ws.ID, done.ID, rec); err != nil {
		t.Fatal(err)
	}
	cancelled := mustCreateUpload(t, s, clock, ws.ID, 100, 10_000)
	kept := mustAddPart(t, s, ws.ID, cancelled.ID, 50)
	if _, err := s.CancelUpload(ctx, ws.ID, cancelled.ID); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteParts(ctx, []string{p.ID}); err != nil {
		t.Fatal(err)
	}
	clock.advance(uploadTTL + files.UploadRowRetention - time.Minute)
	pending := mustCreateUpload(t, s, clock, ws.ID, 100, 10_000)
	if n, err := s.SweepUploads(ctx, 10); err != nil || n != 0 {
		t.Fatalf("SweepUploads before the retention = %d, %v; want 0", n, err)
	}
	clock.advance(time.Minute)
	if n, err := s.SweepUploads(ctx, 10); err != nil || n != 1 {
		t.Fatalf("SweepUploads = %d, %v; want 1 (the completed upload's)", n, err)
	}
	if _, _, err := s.Upload(ctx, ws.ID, done.ID); !errors.Is(err, files.ErrUploadNotFound) {
		t.Errorf("the swept upload: %v, want not found", err)
	}
	if _, err := s.FileByID(ctx, ws.ID, rec.ID); err != nil {
		t.Errorf("the completed upload's file: %v", err)
	}
	// The cancelled one keeps its row while its part does; then goes.
	if err := s.DeleteParts(ctx, []string{kept.ID}); err != nil {
		t.Fatal(err)
	}
	if n, err := s.SweepUploads(ctx, 10); err != nil || n != 1 {
		t.Fatalf("SweepUploads once the part is gone = %d, %v; want 1", n, err)
	}
	if st := uploadStatus(t, s, ws.ID, pending.ID); st != files.UploadPending {
		t.Errorf("the pending upload is %s", st)
	}
}

// testUploadTally: the row's tally of parts is what the parts add up to,
// and the upload is answered as Upload answers it (expired past its time).
func testUploadTally(t *testing.T, b backend) {
	s, clock, ws := uploadFixture(t, b)
	ctx := testContext(t)
	u := mustCreateUpload(t, s, clock, ws.ID, 900, 10_000)
	if _, tally, err := s.UploadTally(ctx, ws.ID, u.ID); err != nil || tally != (files.PartsTally{}) {
		t.Fatalf("UploadTally before parts = %+v, %v", tally, err)
	}
	mustAddPart(t, s, ws.ID, u.ID, 300)
	mustAddPart(t, s, ws.ID, u.ID, 200)
	got, tally, err := s.UploadTally(ctx, ws.ID, u.ID)
	if err != nil || tally != (files.PartsTally{Count: 2, Bytes: 500}) || got != u {
		t.Errorf("UploadTally = %+v, %+v, %v; want %+v and 2 parts of 500 bytes", got, tally, err, u)
	}
	for _, id := range []string{"upload_unknown", u.ID} {
		wsID := ws.ID
		if id == u.ID {
			wsID = "00000000-0000-4000-8000-000000000000"
		}
		if _, _, err := s.UploadTally(ctx, wsID, id); !errors.Is(err, files.ErrUploadNotFound) {
			t.Errorf("UploadTally(%s, %s) = %v, want not found", wsID, id, err)
		}
	}
	clock.advance(uploadTTL)
	if got, _, err := s.UploadTally(ctx, ws.ID, u.ID); err != nil || got.Status != files.UploadExpired {
		t.Errorf("past its time: %+v, %v; want expired", got, err)
	}
}
