package spend

import (
	"context"
	"maps"

	"github.com/aigateway/gateway/internal/money"
	"github.com/aigateway/gateway/policy/keys"
)

// KeyChange is a key whose limit or usage changed: its standing now, or
// Gone when it has no limit (any more) or no longer exists.
type KeyChange struct {
	KeyID       string
	Gone        bool
	Limit       money.Micros
	Reset       keys.Reset
	IncludeBYOK bool
	Totals      Totals
}

// WorkspaceChange is a workspace whose budgets, BYOK setting or usage
// changed: its standing now. No budgets: it answers for none (any more).
type WorkspaceChange struct {
	WorkspaceID string
	IncludeBYOK bool
	Budgets     []Budget
	Totals      Totals
}

// Changes are what a ChangeFeed read: standings, and the cursor to read
// the next changes from.
type Changes struct {
	Keys       []KeyChange
	Workspaces []WorkspaceChange
	Next       int64
}

// ChangeFeed is a Store that keeps each key's and workspace's running
// Totals as it records reports, and can tell which standings changed
// since a read: a refresh then costs what changed, not what was ever
// spent.
type ChangeFeed interface {
	// StandingsSince returns, with all, every key with a limit and every
	// workspace with a budget; without, every key and workspace whose
	// limit, budgets or totals may have changed since the read that
	// returned cursor as Next (some that did not may come again). Keys and
	// workspaces with neither a limit nor a budget come only as Gone or
	// without budgets.
	StandingsSince(ctx context.Context, cursor int64, all bool) (Changes, error)
}

// Touched are the totals of the keys and workspaces a recording changed,
// as its transaction left them.
type Touched struct {
	Keys, Workspaces map[string]Totals
}

// TotalsRecorder is a Store that tells what a recording did to the totals.
type TotalsRecorder interface {
	// RecordUsageTotals is RecordUsage, returning also the totals of the
	// keys and workspaces whose usage it changed.
	RecordUsageTotals(ctx context.Context, b Batch) (accepted int, touched Touched, err error)
}

// keyEntry and workspaceEntry are what the Enforcer knows of a key with a
// limit and of a workspace with budgets.
type keyEntry struct {
	limit       money.Micros
	reset       keys.Reset
	includeBYOK bool
	totals      Totals
}

type workspaceEntry struct {
	includeBYOK bool
	budgets     []Budget
	totals      Totals
}

func (k *keyEntry) verdict(w Windows) *KeyLimitError {
	return keyVerdict(KeyStanding{Limit: k.limit, Reset: k.reset, IncludeBYOK: k.includeBYOK, Usage: k.totals.Usage(w)})
}

func (ws *workspaceEntry) verdict(w Windows) *BudgetError {
	u := ws.totals.Usage(w)
	var out *BudgetError
	for _, b := range ws.budgets {
		out = widerBudget(out, BudgetStanding{Budget: b, IncludeBYOK: ws.includeBYOK, Usage: u}, w)
	}
	return out
}

// view is the Enforcer's view of every key with a limit and every
// workspace with budgets, kept current from a ChangeFeed.
type view struct {
	keys       map[string]*keyEntry
	workspaces map[string]*workspaceEntry
	cursor     int64
	// built is the windows the published Snapshot was decided in.
	built Windows
}

// apply takes in what a refresh read (its totals merged with those already
// learnt, which may be newer) and returns the ids whose entries changed.
func (s *view) apply(c Changes) (keyIDs, wsIDs []string) {
	for _, k := range c.Keys {
		keyIDs = append(keyIDs, k.KeyID)
		if k.Gone {
			delete(s.keys, k.KeyID)
			continue
		}
		t := k.Totals
		if old := s.keys[k.KeyID]; old != nil {
			t = t.Merge(old.totals)
		}
		s.keys[k.KeyID] = &keyEntry{limit: k.Limit, reset: k.Reset, includeBYOK: k.IncludeBYOK, totals: t}
	}
	for _, ws := range c.Workspaces {
		wsIDs = append(wsIDs, ws.WorkspaceID)
		if len(ws.Budgets) == 0 {
			delete(s.workspaces, ws.WorkspaceID)
			continue
		}
		t := ws.Totals
		if old := s.workspaces[ws.WorkspaceID]; old != nil {
			t = t.Merge(old.totals)
		}
		s.workspaces[ws.WorkspaceID] = &workspaceEntry{includeBYOK: ws.IncludeBYOK, budgets: ws.Budgets, totals: t}
	}
	return keyIDs, wsIDs
}

// learn merges the totals a recording left; only keys with a limit and
// workspaces with budgets are kept.
func (s *view) learn(t Touched) (keyIDs, wsIDs []string) {
	for id, tot := range t.Keys {
		if e := s.keys[id]; e != nil {
			e.totals = e.totals.Merge(tot)
			keyIDs = append(keyIDs, id)
		}
	}
	for id, tot := range t.Workspaces {
		if e := s.workspaces[id]; e != nil {
			e.totals = e.totals.Merge(tot)
			wsIDs = append(wsIDs, id)
		}
	}
	return keyIDs, wsIDs
}

// snapshot decides every entry in w.
func (s *view) snapshot(w Windows) *Snapshot {
	snap := &Snapshot{At: w.Now, Keys: map[string]*KeyLimitError{}, Workspaces: map[string]*BudgetError{}}
	for id, k := range s.keys {
		if v := k.verdict(w); v != nil {
			snap.Keys[id] = v
		}
	}
	for id, ws := range s.workspaces {
		if v := ws.verdict(w); v != nil {
			snap.Workspaces[id] = v
		}
	}
	s.built = w
	return snap
}

// update is prev with the entries of keyIDs and wsIDs decided again in w:
// the maps are copied (they are read by requests, never changed), which
// costs the keys and workspaces refused, not all of them.
func (s *view) update(prev *Snapshot, w Windows, keyIDs, wsIDs []string) *Snapshot {
	if prev == nil || !sameWindows(prev, s.built, w) {
		return s.snapshot(w)
	}
	if len(keyIDs) == 0 && len(wsIDs) == 0 {
		return prev
	}
	snap := &Snapshot{At: w.Now, Keys: maps.Clone(prev.Keys), Workspaces: maps.Clone(prev.Workspaces)}
	for _, id := range keyIDs {
		delete(snap.Keys, id)
		if e := s.keys[id]; e != nil {
			if v := e.verdict(w); v != nil {
				snap.Keys[id] = v
			}
		}
	}
	for _, id := range wsIDs {
		delete(snap.Workspaces, id)
		if e := s.workspaces[id]; e != nil {
			if v := e.verdict(w); v != nil {
				snap.Workspaces[id] = v
			}
		}
	}
	return snap
}

// sameWindows reports whether a snapshot built in built may be updated in
// w: the same windows, so no entry left untouched decides differently.
func sameWindows(prev *Snapshot, built, w Windows) bool {
	return prev != nil && built.Daily == w.Daily && built.Weekly == w.Weekly && built.Monthly == w.Monthly
}
