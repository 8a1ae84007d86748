package spend

import (
	"errors"
	"time"

	"github.com/aigateway/gateway/internal/money"
	"github.com/aigateway/gateway/policy/keys"
)

// Usage is what was reported for a key (or a workspace), all time and in
// the current windows; the BYOK sums are the part served with a provider key
// of the user's own.
type Usage struct {
	Total, Daily, Weekly, Monthly                 money.Micros
	BYOKTotal, BYOKDaily, BYOKWeekly, BYOKMonthly money.Micros
}

// In returns the usage of the window of iv, with or without its BYOK part.
func (u Usage) In(iv Interval, includeBYOK bool) money.Micros {
	all, byok := u.Total, u.BYOKTotal
	switch iv {
	case Daily:
		all, byok = u.Daily, u.BYOKDaily
	case Weekly:
		all, byok = u.Weekly, u.BYOKWeekly
	case Monthly:
		all, byok = u.Monthly, u.BYOKMonthly
	}
	if includeBYOK {
		return all
	}
	return all - byok
}

// LimitInterval is the window of a key's limit.
func LimitInterval(r keys.Reset) Interval {
	switch r {
	case keys.ResetDaily:
		return Daily
	case keys.ResetWeekly:
		return Weekly
	case keys.ResetMonthly:
		return Monthly
	}
	return Lifetime
}

// Remaining is a key's limit minus its usage in the limit's window, never
// below 0; nil without a limit.
func Remaining(k *keys.APIKey, u Usage) *money.Micros {
	if k.Limit == nil {
		return nil
	}
	r := max(*k.Limit-u.In(LimitInterval(k.LimitReset), k.IncludeBYOKInLimit), 0)
	return &r
}

// Errors of the 402 decision.
var (
	ErrKeyLimit = errors.New("key limit exceeded")
	ErrBudget   = errors.New("workspace budget exceeded")
)

// KeyLimitError refuses a key whose limit is spent. Its fields are safe to
// show the key's holder.
type KeyLimitError struct {
	// Limit is the key's spending limit.
	Limit money.Micros
	// Reset is the limit's window; keys.ResetNever for a lifetime limit.
	Reset keys.Reset
}

func (e *KeyLimitError) Error() string { return "key limit exceeded" }
func (e *KeyLimitError) Unwrap() error { return ErrKeyLimit }

// BudgetError refuses a key whose workspace has reached a budget. Its
// fields are safe to show the workspace's keys.
type BudgetError struct {
	// WorkspaceID is the workspace whose budget was reached.
	WorkspaceID string
	// Interval is the budget's window.
	Interval Interval
	// Limit is the budget.
	Limit money.Micros
	// ResetsAt is when the window ends and the budget is whole again; nil
	// for a lifetime budget.
	ResetsAt *time.Time
}

func (e *BudgetError) Error() string { return "workspace budget exceeded" }
func (e *BudgetError) Unwrap() error { return ErrBudget }

// Snapshot is what one refresh found spent: the keys whose limit is
// reached and the workspaces over one of their budgets. It is read by every
// request and never changed; a refresh makes a new one.
type Snapshot struct {
	At         time.Time
	Keys       map[string]*KeyLimitError // by key id
	Workspaces map[string]*BudgetError   // by workspace id
}

// Decide is the 402 decision for a request of k: nil to serve it, else why
// not. Service keys are never refused for spend; a key bound to no
// workspace answers only for its own limit.
func (s *Snapshot) Decide(k *keys.APIKey) error {
	if s == nil || k.Role == keys.RoleService {
		return nil
	}
	if e, over := s.Keys[k.ID]; over {
		return e
	}
	if k.WorkspaceID != "" {
		if e, over := s.Workspaces[k.WorkspaceID]; over {
			return e
		}
	}
	return nil
}

// KeyStanding is a key with a limit and its usage now.
type KeyStanding struct {
	KeyID       string
	Limit       money.Micros
	Reset       keys.Reset
	IncludeBYOK bool
	Usage       Usage
}

// BudgetStanding is a budget with its workspace's usage now.
type BudgetStanding struct {
	Budget
	IncludeBYOK bool
	Usage       Usage
}

// NewSnapshot decides, from the standings at w.Now, which keys and
// workspaces are spent. A workspace over several budgets is reported for
// the widest.
func NewSnapshot(w Windows, ks []KeyStanding, bs []BudgetStanding) *Snapshot {
	s := &Snapshot{At: w.Now, Keys: map[string]*KeyLimitError{}, Workspaces: map[string]*BudgetError{}}
	for _, k := range ks {
		if v := keyVerdict(k); v != nil {
			s.Keys[k.KeyID] = v
		}
	}
	for _, b := range bs {
		if v := widerBudget(s.Workspaces[b.WorkspaceID], b, w); v != nil {
			s.Workspaces[b.WorkspaceID] = v
		}
	}
	return s
}

// keyVerdict refuses k when its limit is spent.
func keyVerdict(k KeyStanding) *KeyLimitError {
	if k.Usage.In(LimitInterval(k.Reset), k.IncludeBYOK) >= k.Limit {
		return &KeyLimitError{Limit: k.Limit, Reset: k.Reset}
	}
	return nil
}

// widerBudget is the refusal of a workspace over cur (nil: none yet) and
// maybe b: the widest budget reached is the one named.
func widerBudget(cur *BudgetError, b BudgetStanding, w Windows) *BudgetError {
	if b.Usage.In(b.Interval, b.IncludeBYOK) < b.Limit {
		return cur
	}
	if cur != nil && cur.Interval.rank() <= b.Interval.rank() {
		return cur
	}
	e := &BudgetError{WorkspaceID: b.WorkspaceID, Interval: b.Interval, Limit: b.Limit}
	if end, ok := b.Interval.End(w.Now); ok {
		e.ResetsAt = &end
	}
	return e
}
