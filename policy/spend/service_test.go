package spend

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/aigateway/gateway/policy/keys"
)

// recordingStore keeps what RecordUsage was given; the other methods are
// not called by ReportBatch.
type recordingStore struct {
	Store
	recorded []Report
	batches  []Batch
}

func (s *recordingStore) KeysOf(_ context.Context, _ string, ids []string) (map[string]string, error) {
	out := map[string]string{}
	for _, id := range ids {
		if id != "00000000000000ff" {
			out[id] = "ws"
		}
	}
	return out, nil
}

func (s *recordingStore) RecordUsage(_ context.Context, b Batch) (int, error) {
	s.recorded = append(s.recorded, b.Reports...)
	s.batches = append(s.batches, b)
	return len(b.Reports), nil
}

// TestReportBatchKeepsNoReferenceToBody: the gateway reads batches into
// recycled buffers, so nothing ReportBatch keeps or returns may point
// into the body it was given: overwriting the body afterwards changes
// neither the stored reports nor the error naming a bad report.
func TestReportBatchKeepsNoReferenceToBody(t *testing.T) {
	store := &recordingStore{}
	svc := NewService(store, func() string { return "id" }, nil)
	caller := &keys.APIKey{UserID: "alice", Role: keys.RoleService}
	body := []byte(`{"reports":[{"id":"r-1","key":"00000000000000aa","cost":0.5},{"id":"r-2","key":"00000000000000ab","cost":1,"byok":true}]}`)
	if _, err := svc.ReportBatch(context.Background(), caller, body); err != nil {
		t.Fatal(err)
	}
	for i := range body {
		body[i] = 'x'
	}
	if len(store.recorded) != 2 || store.recorded[0].ID != "r-1" || store.recorded[0].KeyID != "00000000000000aa" ||
		store.recorded[1].ID != "r-2" || store.recorded[1].KeyID != "00000000000000ab" {
		t.Fatalf("recorded %+v after the body was overwritten", store.recorded)
	}
	if b := store.batches[0]; b.UserID != "alice" || len(b.Workspaces) != 2 || b.Workspaces["00000000000000aa"] != "ws" {
		t.Fatalf("batch of %q with workspaces %v", b.UserID, b.Workspaces)
	}

	bad := []byte(`{"reports":[{"id":"r-3","key":"00000000000000aa","cost":1,"unknown_field_name":1}]}`)
	_, err := svc.ReportBatch(context.Background(), caller, bad)
	for i := range bad {
		bad[i] = 'x'
	}
	var invalid *InvalidError
	if !errors.As(err, &invalid) || !strings.Contains(err.Error(), "reports[0].unknown_field_name") {
		t.Fatalf("error after the body was overwritten: %v", err)
	}
}

// TestReportBatchRecyclesItsReports: a batch's reports live in a recycled
// slice, cleared once recorded, so one batch's reports never show in the
// next and each batch is parsed whole.
func TestReportBatchRecyclesItsReports(t *testing.T) {
	store := &recordingStore{}
	svc := NewService(store, func() string { return "id" }, nil)
	caller := &keys.APIKey{UserID: "alice", Role: keys.RoleService}
	for _, body := range []string{
		`{"reports":[{"id":"a-1","key":"00000000000000aa","cost":1},{"id":"a-2","key":"00000000000000aa","cost":2},{"id":"a-3","key":"00000000000000ab","cost":3}]}`,
		`{"reports":[{"id":"b-1","key":"00000000000000ab","cost":4}]}`,
		`{"reports":[{"id":"c-1","key":"00000000000000aa","cost":5},{"id":"c-2","key":"00000000000000aa","cost":6}]}`,
	} {
		if _, err := svc.ReportBatch(context.Background(), caller, []byte(body)); err != nil {
			t.Fatal(err)
		}
	}
	var got []string
	for _, r := range store.recorded {
		got = append(got, fmt.Sprintf("%s %s %d", r.ID, r.KeyID, r.Cost))
	}
	want := []string{
		"a-1 00000000000000aa 1000000", "a-2 00000000000000aa 2000000", "a-3 00000000000000ab 3000000",
		"b-1 00000000000000ab 4000000",
		"c-1 00000000000000aa 5000000", "c-2 00000000000000aa 6000000",
	}
	if !slices.Equal(got, want) {
		t.Errorf("recorded %q, want %q", got, want)
	}
}

// TestReportsAreRecordedThroughTheRunner: parsing and storing a batch or a
// single report happen inside the Runner (the gateway's lowered threads),
// nothing of it outside; a Runner that gives up (its context ended while
// waiting) leaves nothing recorded; a caller refused never reaches it.
func TestReportsAreRecordedThroughTheRunner(t *testing.T) {
	store := &recordingStore{}
	inside, runs := false, 0
	var giveUp error
	run := func(_ context.Context, work func()) error {
		if giveUp != nil {
			return giveUp
		}
		runs++
		inside = true
		defer func() { inside = false }()
		work()
		return nil
	}
	svc := NewService(runnerCheckingStore{store, &inside, t}, nil, run)
	caller := &keys.APIKey{UserID: "alice", Role: keys.RoleService}
	ctx := context.Background()

	if res, err := svc.ReportBatch(ctx, caller, []byte(`{"reports":[{"id":"r-1","key":"00000000000000aa","cost":1}]}`)); err != nil || res.Accepted != 1 {
		t.Fatalf("ReportBatch = %+v, %v", res, err)
	}
	if res, err := svc.ReportOne(ctx, caller, "00000000000000aa", []byte(`{"id":"r-2","cost":1}`)); err != nil || res.Accepted != 1 {
		t.Fatalf("ReportOne = %+v, %v", res, err)
	}
	if _, err := svc.ReportBatch(ctx, caller, []byte(`{"reports":[{"id":"r-3","key":"00000000000000ff","cost":1}]}`)); !errors.As(err, new(*InvalidError)) {
		t.Fatalf("a foreign key's report: %v, want its InvalidError through the runner", err)
	}
	if runs != 3 {
		t.Errorf("the runner ran %d times, want 3", runs)
	}

	standard := &keys.APIKey{UserID: "alice", Role: keys.RoleStandard}
	if _, err := svc.ReportBatch(ctx, standard, []byte(`{}`)); !errors.Is(err, ErrNotServiceKey) || runs != 3 {
		t.Errorf("a standard key: %v after %d runs, want ErrNotServiceKey without running", err, runs)
	}

	giveUp = context.Canceled
	if _, err := svc.ReportBatch(ctx, caller, []byte(`{"reports":[{"id":"r-4","key":"00000000000000aa","cost":1}]}`)); !errors.Is(err, context.Canceled) {
		t.Errorf("ReportBatch with the runner giving up = %v, want context.Canceled", err)
	}
	if _, err := svc.ReportOne(ctx, caller, "00000000000000aa", []byte(`{"id":"r-5","cost":1}`)); !errors.Is(err, context.Canceled) {
		t.Errorf("ReportOne with the runner giving up = %v, want context.Canceled", err)
	}
	if len(store.recorded) != 2 {
		t.Errorf("recorded %+v, want r-1 and r-2 only", store.recorded)
	}
}

// runnerCheckingStore fails the test when the Service reaches the store
// outside its Runner.
type runnerCheckingStore struct {
	*recordingStore
	inside *bool
	t      *testing.T
}

func (s runnerCheckingStore) KeysOf(ctx context.Context, user string, ids []string) (map[string]string, error) {
	if !*s.inside {
		s.t.Error("KeysOf called outside the runner")
	}
	return s.recordingStore.KeysOf(ctx, user, ids)
}

func (s runnerCheckingStore) RecordUsage(ctx context.Context, b Batch) (int, error) {
	if !*s.inside {
		s.t.Error("RecordUsage called outside the runner")
	}
	return s.recordingStore.RecordUsage(ctx, b)
}

// countingStore counts the lookups of key ownership; every key is alice's.
type countingStore struct {
	recordingStore
	keysOf int
}

func (s *countingStore) KeysOf(ctx context.Context, user string, ids []string) (map[string]string, error) {
	s.keysOf++
	return s.recordingStore.KeysOf(ctx, user, ids)
}

// TestReportOneLooksUpItsKeyOnce: a single report asks the store whose key
// it names once, as a batch does, and an unknown key is still a 404.
func TestReportOneLooksUpItsKeyOnce(t *testing.T) {
	store := &countingStore{}
	svc := NewService(store, nil, nil)
	caller := &keys.APIKey{UserID: "alice", Role: keys.RoleService}
	if res, err := svc.ReportOne(context.Background(), caller, "00000000000000aa", []byte(`{"id":"r-1","cost":1}`)); err != nil || res.Accepted != 1 {
		t.Fatalf("ReportOne = %+v, %v", res, err)
	}
	if store.keysOf != 1 {
		t.Errorf("KeysOf called %d times for one report, want 1", store.keysOf)
	}
	store.keysOf = 0
	if _, err := svc.ReportOne(context.Background(), caller, "00000000000000ff", []byte(`{"id":"r-2","cost":1}`)); !errors.Is(err, keys.ErrKeyNotFound) {
		t.Errorf("a report of another user's key: %v, want ErrKeyNotFound", err)
	}
	if store.keysOf != 1 || len(store.recorded) != 1 {
		t.Errorf("an unknown key: KeysOf called %d times, %d reports recorded; want 1 and 1", store.keysOf, len(store.recorded))
	}
}
