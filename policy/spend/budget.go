package spend

import (
	"errors"
	"fmt"
	"time"

	"github.com/aigateway/gateway/internal/invalid"
	"github.com/aigateway/gateway/internal/money"
)

// Budget is a workspace's spending cap for one interval.
type Budget struct {
	ID          string
	WorkspaceID string
	Interval    Interval
	Limit       money.Micros
	CreatedAt   time.Time
	UpdatedAt   time.Time
}

// BudgetRequest sets a workspace's budget of one interval, typed: the edge
// decodes it from the body of PUT /workspaces/{id}/budgets/{interval}.
type BudgetRequest struct {
	// Limit is required (nil: not given) and more than 0.
	Limit *money.Micros
	// IncludeBYOK, when not nil, sets whether usage served with the
	// workspace's own provider keys counts against its budgets.
	IncludeBYOK *bool
}

// Check returns what is wrong with r (*invalid.Problems naming limit_usd),
// or nil.
func (r BudgetRequest) Check() error {
	if r.Limit == nil {
		return invalid.One("limit_usd", "required")
	}
	return CheckBudgetLimit(*r.Limit)
}

// CheckBudgetLimit returns what is wrong with limit as a budget's limit
// (*invalid.Problems naming limit_usd), or nil. A refused budget names the
// first problem met in the client's order, so the edge applies this rule
// as it decodes the limit, beside its own of the body's form.
func CheckBudgetLimit(limit money.Micros) error {
	if limit <= 0 {
		return invalid.One("limit_usd", "must be more than 0")
	}
	return nil
}

// ErrOrder: budgets must strictly decrease as the interval narrows
// (lifetime > monthly > weekly > daily, among those set).
var ErrOrder = errors.New("budgets must decrease as the interval narrows")

// OrderError names the interval a new limit conflicts with.
type OrderError struct {
	Interval, ConflictsWith Interval
	Limit, Other            money.Micros
}

func (e *OrderError) Error() string {
	rel := "less"
	if e.Interval.rank() < e.ConflictsWith.rank() {
		rel = "more"
	}
	return fmt.Sprintf("the %s budget (%s) must be %s than the %s budget (%s)", e.Interval, e.Limit, rel, e.ConflictsWith, e.Other)
}

// Unwrap makes errors.Is(err, ErrOrder) hold.
func (e *OrderError) Unwrap() error { return ErrOrder }

// CheckOrder says whether setting iv to limit, beside the budgets already
// set (by interval; iv's own, if any, is replaced), keeps the strict order.
// The conflict named is the nearest interval that breaks it.
func CheckOrder(set map[Interval]money.Micros, iv Interval, limit money.Micros) error {
	r := iv.rank()
	// Wider intervals must be larger: look outward from iv, nearest first.
	for i := r - 1; i >= 0; i-- {
		if other, ok := set[Intervals[i]]; ok {
			if other <= limit {
				return &OrderError{iv, Intervals[i], limit, other}
			}
			break
		}
	}
	for i := r + 1; i < len(Intervals); i++ {
		if other, ok := set[Intervals[i]]; ok {
			if other >= limit {
				return &OrderError{iv, Intervals[i], limit, other}
			}
			break
		}
	}
	return nil
}
