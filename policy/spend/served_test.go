package spend

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/aigateway/gateway/policy/keys"
)

// conflictStore refuses every batch as a replay of the id it holds.
type conflictStore struct {
	recordingStore
	id string
}

func (s *conflictStore) RecordUsage(context.Context, Batch) (int, error) {
	return 0, &ReplayConflictError{ID: s.id, Index: 99}
}

// TestReplayConflictNamesItsReport: the refusal of a replay names the
// report by its id and its place in the batch the reporter sent (the
// store sees them sorted), and a report alone by its id only.
func TestReplayConflictNamesItsReport(t *testing.T) {
	svc := NewService(&conflictStore{id: "b"}, nil, nil)
	caller := &keys.APIKey{UserID: "alice", Role: keys.RoleService}
	_, err := svc.ReportBatch(context.Background(), caller, fill(
		[]step{setID("c"), setKey("00000000000000aa"), setCost(1)},
		[]step{setID("b"), setKey("00000000000000aa"), setCost(1)}))
	var rc *ReplayConflictError
	if !errors.As(err, &rc) || rc.ID != "b" || rc.Index != 1 || !errors.Is(err, ErrReplayConflict) {
		t.Fatalf("batch: %#v", err)
	}
	_, err = svc.ReportOne(context.Background(), caller, "00000000000000aa", func(f *ReportForm) { f.ID("b"); f.Cost(1) })
	if !errors.As(err, &rc) || rc.ID != "b" || rc.Index != -1 {
		t.Fatalf("alone: %#v", err)
	}
}

func TestSameContent(t *testing.T) {
	stored := Report{ID: "r", KeyID: "k", Cost: 5, At: now, AtGiven: true, Model: "a/b", Provider: "P", Endpoint: "e",
		PromptTokens: 1, CompletionTokens: 2, ReasoningTokens: 3}
	same := stored
	if !same.SameContent(&stored) {
		t.Error("an identical replay differs")
	}
	untimed := stored
	untimed.At, untimed.AtGiven = now.Add(time.Hour), false
	if !untimed.SameContent(&stored) {
		t.Error("a replay without a time (received later) differs")
	}
	for name, change := range map[string]func(*Report){
		"key": func(r *Report) { r.KeyID = "x" }, "cost": func(r *Report) { r.Cost = 6 },
		"byok": func(r *Report) { r.BYOK = true }, "at": func(r *Report) { r.At = r.At.Add(time.Microsecond) },
		"model": func(r *Report) { r.Model = "a/c" }, "provider": func(r *Report) { r.Provider = "" },
		"endpoint": func(r *Report) { r.Endpoint = "f" }, "prompt": func(r *Report) { r.PromptTokens = 0 },
		"completion": func(r *Report) { r.CompletionTokens = 0 }, "reasoning": func(r *Report) { r.ReasoningTokens = 0 },
	} {
		r := stored
		change(&r)
		if r.SameContent(&stored) {
			t.Errorf("a replay with another %s is the same", name)
		}
	}
}

// totalsStore records as recordingStore does and tells the totals it left.
type totalsStore struct{ recordingStore }

func (s *totalsStore) RecordUsageTotals(ctx context.Context, b Batch) (int, Touched, error) {
	n, _ := s.RecordUsage(ctx, b)
	var t Totals
	t.Add(Day(now), b.Reports[0].Cost, false)
	return n, Touched{Keys: map[string]Totals{b.Reports[0].KeyID: t}}, nil
}

// TestRecordingTellsTheEnforcer: the totals a recording left reach the
// replica's Enforcer, which refuses the key crossing its limit before any
// refresh reads it.
func TestRecordingTellsTheEnforcer(t *testing.T) {
	clock := now
	f := &feedStore{all: Changes{Keys: []KeyChange{{KeyID: "00000000000000aa", Limit: 10}}}}
	e := &Enforcer{Store: f, now: func() time.Time { return clock }}
	if err := e.Refresh(context.Background()); err != nil {
		t.Fatal(err)
	}
	svc := NewService(&totalsStore{}, nil, nil)
	svc.TellTotals(e.Learn)
	caller := &keys.APIKey{UserID: "alice", Role: keys.RoleService}
	k := &keys.APIKey{ID: "00000000000000aa", Role: keys.RoleStandard}
	if e.Decide(k) != nil {
		t.Fatal("refused before any usage")
	}
	if _, err := svc.ReportOne(context.Background(), caller, k.ID, func(f *ReportForm) { f.ID("r"); f.Cost(10) }); err != nil {
		t.Fatal(err)
	}
	if !errors.Is(e.Decide(k), ErrKeyLimit) {
		t.Errorf("after the crossing report: %v, want refused at once", e.Decide(k))
	}
	if len(f.reads) != 1 {
		t.Errorf("%d reads of the store, want the first refresh only", len(f.reads))
	}
}
