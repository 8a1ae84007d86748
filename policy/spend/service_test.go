package spend

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/aigateway/gateway/internal/invalid"
	"github.com/aigateway/gateway/internal/money"
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

// TestReportBatchRecyclesItsReports: a batch's reports live in a recycled
// form, cleared once recorded, so one batch's reports never show in the
// next and each batch is read whole.
func TestReportBatchRecyclesItsReports(t *testing.T) {
	store := &recordingStore{}
	svc := NewService(store, func() string { return "id" }, nil)
	caller := &keys.APIKey{UserID: "alice", Role: keys.RoleService}
	report := func(id, key string, c money.Micros) []step { return []step{setID(id), setKey(key), setCost(c)} }
	for _, batch := range [][][]step{
		{report("a-1", "00000000000000aa", 1), report("a-2", "00000000000000aa", 2), report("a-3", "00000000000000ab", 3)},
		{report("b-1", "00000000000000ab", 4)},
		{report("c-1", "00000000000000aa", 5), report("c-2", "00000000000000aa", 6)},
	} {
		if _, err := svc.ReportBatch(context.Background(), caller, fill(batch...)); err != nil {
			t.Fatal(err)
		}
	}
	var got []string
	for _, r := range store.recorded {
		got = append(got, fmt.Sprintf("%s %s %d", r.ID, r.KeyID, r.Cost))
	}
	want := []string{
		"a-1 00000000000000aa 1", "a-2 00000000000000aa 2", "a-3 00000000000000ab 3",
		"b-1 00000000000000ab 4",
		"c-1 00000000000000aa 5", "c-2 00000000000000aa 6",
	}
	if !slices.Equal(got, want) {
		t.Errorf("recorded %q, want %q", got, want)
	}
	if b := store.batches[0]; b.UserID != "alice" || len(b.Workspaces) != 2 || b.Workspaces["00000000000000aa"] != "ws" {
		t.Fatalf("batch of %q with workspaces %v", b.UserID, b.Workspaces)
	}
	_, err := svc.ReportBatch(context.Background(), caller, fill(report("d-1", "00000000000000ff", 1)))
	if field, problem := problemOf(t, err); field != "reports[0].key" || problem != "no such key of this user" {
		t.Errorf("a report of another user's key: %s: %s", field, problem)
	}
}

// TestReportsAreRecordedThroughTheRunner: reading and storing a batch or a
// single report happen inside the Runner (the gateway's lowered threads),
// nothing of it outside; a Runner that gives up (its context ended while
// waiting) leaves nothing read or recorded; a caller refused never reaches
// it.
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
	batch := func(steps ...[]step) func(*BatchForm) {
		return func(b *BatchForm) {
			if !inside {
				t.Error("the batch was read outside the runner")
			}
			fill(steps...)(b)
		}
	}
	one := func(steps ...step) func(*ReportForm) {
		return func(f *ReportForm) {
			if !inside {
				t.Error("the report was read outside the runner")
			}
			for _, s := range steps {
				s(f)
			}
		}
	}

	if res, err := svc.ReportBatch(ctx, caller, batch(valid("r-1"))); err != nil || res.Accepted != 1 {
		t.Fatalf("ReportBatch = %+v, %v", res, err)
	}
	if res, err := svc.ReportOne(ctx, caller, "00000000000000aa", one(setID("r-2"), setCost(1))); err != nil || res.Accepted != 1 {
		t.Fatalf("ReportOne = %+v, %v", res, err)
	}
	if _, err := svc.ReportBatch(ctx, caller, batch([]step{setID("r-3"), setKey("00000000000000ff"), setCost(1)})); invalid.Fields(err) == nil {
		t.Fatalf("a foreign key's report: %v, want its problem through the runner", err)
	}
	if runs != 3 {
		t.Errorf("the runner ran %d times, want 3", runs)
	}

	standard := &keys.APIKey{UserID: "alice", Role: keys.RoleStandard}
	if _, err := svc.ReportBatch(ctx, standard, batch()); !errors.Is(err, ErrNotServiceKey) || runs != 3 {
		t.Errorf("a standard key: %v after %d runs, want ErrNotServiceKey without running", err, runs)
	}

	giveUp = context.Canceled
	if _, err := svc.ReportBatch(ctx, caller, batch(valid("r-4"))); !errors.Is(err, context.Canceled) {
		t.Errorf("ReportBatch with the runner giving up = %v, want context.Canceled", err)
	}
	if _, err := svc.ReportOne(ctx, caller, "00000000000000aa", one(setID("r-5"), setCost(1))); !errors.Is(err, context.Canceled) {
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
	report := func(name string) func(*ReportForm) { return func(f *ReportForm) { f.ID(name); f.Cost(1) } }
	if res, err := svc.ReportOne(context.Background(), caller, "00000000000000aa", report("r-1")); err != nil || res.Accepted != 1 {
		t.Fatalf("ReportOne = %+v, %v", res, err)
	}
	if store.keysOf != 1 {
		t.Errorf("KeysOf called %d times for one report, want 1", store.keysOf)
	}
	store.keysOf = 0
	if _, err := svc.ReportOne(context.Background(), caller, "00000000000000ff", report("r-2")); !errors.Is(err, keys.ErrKeyNotFound) {
		t.Errorf("a report of another user's key: %v, want ErrKeyNotFound", err)
	}
	if store.keysOf != 1 || len(store.recorded) != 1 {
		t.Errorf("an unknown key: KeysOf called %d times, %d reports recorded; want 1 and 1", store.keysOf, len(store.recorded))
	}
}

// budgetStore stores budgets, or refuses with err.
type budgetStore struct {
	Store
	err error
}

func (s budgetStore) PutBudget(_ context.Context, b Budget, _ *bool, _ func(map[Interval]money.Micros) error) (Budget, bool, error) {
	return b, true, s.err
}
func (s budgetStore) DeleteBudget(context.Context, string, Interval) error { return s.err }
func (s budgetStore) Budgets(context.Context, string) ([]Budget, bool, error) {
	return nil, false, nil
}

// A budget set or removed is told to the replica's spend view once it is
// stored, and a refused change is not.
func TestBudgetChangesAreTold(t *testing.T) {
	limit := money.Micros(10)
	for _, refused := range []error{nil, errors.New("store down")} {
		svc := NewService(budgetStore{err: refused}, func() string { return "b1" }, nil)
		told := 0
		svc.OnBudgetsChanged(func(context.Context) { told++ })
		_, _, _, _ = svc.PutBudget(context.Background(), "ws", Daily, BudgetRequest{Limit: &limit})
		_ = svc.DeleteBudget(context.Background(), "ws", Daily)
		if want := map[bool]int{true: 0, false: 2}[refused != nil]; told != want {
			t.Errorf("refused %v: told %d times, want %d", refused, told, want)
		}
	}
}
