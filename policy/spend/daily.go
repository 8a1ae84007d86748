package spend

import (
	"context"
	"errors"
	"strconv"
	"time"

	"github.com/aigateway/gateway/internal/invalid"
	"github.com/aigateway/gateway/internal/money"
	"github.com/aigateway/gateway/policy/keys"
	"github.com/aigateway/gateway/workspace"
)

// The history of daily usage: how many days it may span, and how many it
// spans when the caller does not say.
const (
	MaxHistoryDays     = 90
	DefaultHistoryDays = 30
)

// DailyQuery asks for the usage per UTC day of the last Days days (today
// included). At most one of Workspace and KeyID is set; neither asks for
// every key of the caller's user.
type DailyQuery struct {
	Days int
	// Workspace is an id or slug of a workspace of the caller's user.
	Workspace string
	// KeyID is the hash of a key of the caller's user.
	KeyID string
}

// DailyScope is whose usage a history sums, resolved and checked: the
// usage of one key (KeyID), of every key ever in one workspace, deleted
// keys included (WorkspaceID), or of every key of UserID (neither): those
// in its workspaces, deleted ones included, and those it still holds
// outside any workspace.
type DailyScope struct {
	UserID      string
	WorkspaceID string
	KeyID       string
}

// DaySum is the usage of one UTC day, numbered as Day numbers it.
type DaySum struct {
	Day        int64
	Cost, BYOK money.Micros
}

// DayUsage is the usage of one UTC day: Date is its 00:00 UTC.
type DayUsage struct {
	Date       time.Time
	Cost, BYOK money.Micros
}

// WorkspaceLookup returns the id of userID's workspace ref (an id or a
// slug), or an error wrapping workspace.ErrNotFound when userID has none
// such: another user's workspace is not found, exactly like a missing one.
type WorkspaceLookup func(ctx context.Context, userID, ref string) (id string, err error)

// ErrInvalidQuery: a history query is invalid; the error names the field.
var ErrInvalidQuery = errors.New("invalid usage query")

// QueryError names the query parameter at fault.
type QueryError struct {
	Field, Problem string
}

func (e *QueryError) Error() string { return "invalid usage query: " + e.Field + ": " + e.Problem }

// Unwrap makes errors.Is(err, ErrInvalidQuery) hold.
func (e *QueryError) Unwrap() error { return ErrInvalidQuery }

// FieldProblems names the parameter at fault.
func (e *QueryError) FieldProblems() []invalid.Field {
	return []invalid.Field{{Name: e.Field, Problem: e.Problem}}
}

// DailyUsage returns caller's usage per UTC day over the last q.Days days,
// oldest first, one entry per day (days without usage are zero), in the
// scope that ResolveScope allows.
func (s *Service) DailyUsage(ctx context.Context, caller *keys.APIKey, q DailyQuery, lookup WorkspaceLookup) ([]DayUsage, error) {
	scope, err := s.ResolveScope(ctx, caller, q, lookup)
	if err != nil {
		return nil, err
	}
	first, last := HistoryDays(s.now(), q.Days)
	sums, err := s.store.DailyUsage(ctx, scope, first, last)
	if err != nil {
		return nil, err
	}
	return FillDays(first, last, sums), nil
}

// ResolveScope checks q against what caller may see and resolves it.
//
// A management key acts for its user: it may ask for any key or workspace
// of that user, and asking for neither sums all of the user's keys.
// Another user's key or workspace is not found (404), exactly like an
// unknown one, so the answer tells nothing of what other users hold.
//
// Any other key (standard, service) sees its own usage only, as it sees
// its own key and nothing of the /keys routes: asking for neither, or for
// its own hash, is its own key's usage; it may also ask for its own
// workspace, whose spend is what that workspace's budgets (and so its own
// 402s) are counted on. Anything else — another key's hash or another
// workspace, of its user, of another user or of nobody — is 403, the
// answer a standard key gets from every management route, whatever the id:
// the refusal depends on the caller alone, so it reveals nothing about the
// id.
func (s *Service) ResolveScope(ctx context.Context, caller *keys.APIKey, q DailyQuery, lookup WorkspaceLookup) (DailyScope, error) {
	if q.Days < 1 || q.Days > MaxHistoryDays {
		return DailyScope{}, &QueryError{"days", "must be an integer from 1 to " + strconv.Itoa(MaxHistoryDays)}
	}
	if q.Workspace != "" && q.KeyID != "" {
		return DailyScope{}, &QueryError{"key", "give key or workspace_id, not both"}
	}
	scope := DailyScope{UserID: caller.UserID}
	if caller.Role != keys.RoleManagement {
		switch {
		case q.KeyID != "" && q.KeyID != caller.ID:
			return DailyScope{}, keys.ErrForbidden
		case q.Workspace != "":
			if caller.WorkspaceID == "" {
				return DailyScope{}, keys.ErrForbidden
			}
			id, err := lookup(ctx, caller.UserID, q.Workspace)
			if errors.Is(err, workspace.ErrNotFound) || (err == nil && id != caller.WorkspaceID) {
				return DailyScope{}, keys.ErrForbidden
			}
			if err != nil {
				return DailyScope{}, err
			}
			scope.WorkspaceID = id
		default:
			scope.KeyID = caller.ID
		}
		return scope, nil
	}
	switch {
	case q.KeyID != "":
		if _, ok := keys.ParseID(q.KeyID); !ok {
			return DailyScope{}, keys.ErrKeyNotFound
		}
		known, err := s.store.KeysOf(ctx, caller.UserID, []string{q.KeyID})
		if err != nil {
			return DailyScope{}, err
		}
		if _, ok := known[q.KeyID]; !ok {
			return DailyScope{}, keys.ErrKeyNotFound
		}
		scope.KeyID = q.KeyID
	case q.Workspace != "":
		id, err := lookup(ctx, caller.UserID, q.Workspace)
		if err != nil {
			return DailyScope{}, err
		}
		scope.WorkspaceID = id
	}
	return scope, nil
}

// HistoryDays are the first and last day (as Day numbers them) of the
// days days that end with now's UTC day.
func HistoryDays(now time.Time, days int) (first, last int64) {
	last = Day(now)
	return last - int64(days) + 1, last
}

// FillDays lays sums out over every day from first to last, oldest first:
// a day with no sum is zero, a sum outside the range is left out.
func FillDays(first, last int64, sums []DaySum) []DayUsage {
	if last < first {
		return nil
	}
	out := make([]DayUsage, last-first+1)
	for i := range out {
		out[i].Date = time.Unix((first+int64(i))*86400, 0).UTC()
	}
	for _, s := range sums {
		if s.Day < first || s.Day > last {
			continue
		}
		d := &out[s.Day-first]
		d.Cost, _ = d.Cost.Add(s.Cost)
		d.BYOK, _ = d.BYOK.Add(s.BYOK)
	}
	return out
}
