package spend

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/aigateway/gateway/internal/money"
	"github.com/aigateway/gateway/policy/keys"
)

// ActivityDays is how many completed UTC days GET /activity reaches back.
const ActivityDays = 30

// ActivityQuery asks for what a user's keys spent on, per day, model,
// provider and endpoint. Zero values ask for nothing in particular.
type ActivityQuery struct {
	// Date is one completed UTC day of the last ActivityDays (its 00:00
	// UTC); zero: all of them.
	Date time.Time
	// KeyID is the hash of a key of the caller's user; Workspace an id or
	// slug of one of its workspaces.
	KeyID, Workspace string
	// UserID, when given, must be the caller's own user.
	UserID string
	// ByWorkspace splits the rows per workspace.
	ByWorkspace bool
}

// ActivityRow is what was spent on one day (Day numbers it) on one model,
// endpoint and provider (and in one workspace, when asked per workspace).
type ActivityRow struct {
	Day                            int64
	Model, Endpoint, Provider      string
	WorkspaceID                    string
	Cost, BYOK                     money.Micros
	Requests                       int64
	PromptTokens, CompletionTokens int64
	ReasoningTokens                int64
}

// ErrOtherUser refuses a management key the activity of another user
// (user_id): its own is all it may read.
var ErrOtherUser = fmt.Errorf("%w: another user's activity", keys.ErrForbidden)

// Activity returns what caller's user spent on (GET /activity): a
// management key's call, for its own user (another user_id: forbidden), of
// all its keys, one key or one workspace (another user's: not found, as
// ResolveScope answers). Rows come newest day first, then by cost, most
// first, then by model.
func (s *Service) Activity(ctx context.Context, caller *keys.APIKey, q ActivityQuery, lookup WorkspaceLookup) ([]ActivityRow, error) {
	if caller.Role != keys.RoleManagement {
		return nil, keys.ErrForbidden
	}
	if q.UserID != "" && q.UserID != caller.UserID {
		return nil, ErrOtherUser
	}
	if q.KeyID != "" && q.Workspace != "" {
		return nil, &QueryError{"api_key_hash", "give api_key_hash or workspace_id, not both"}
	}
	today := Day(s.now())
	first, last := today-ActivityDays, today-1
	if !q.Date.IsZero() {
		d := Day(q.Date)
		if d < first || d > last {
			return nil, &QueryError{"date", "must be one of the last 30 completed UTC days (YYYY-MM-DD)"}
		}
		first, last = d, d
	}
	scope, err := s.ResolveScope(ctx, caller, DailyQuery{Days: 1, KeyID: q.KeyID, Workspace: q.Workspace}, lookup)
	if err != nil {
		return nil, err
	}
	rows, err := s.store.Activity(ctx, scope, first, last, q.ByWorkspace)
	if err != nil {
		return nil, err
	}
	slices.SortFunc(rows, func(a, b ActivityRow) int {
		return cmp.Or(cmp.Compare(b.Day, a.Day), cmp.Compare(b.Cost, a.Cost), cmp.Compare(a.Model, b.Model),
			cmp.Compare(a.Provider, b.Provider), cmp.Compare(a.Endpoint, b.Endpoint), cmp.Compare(a.WorkspaceID, b.WorkspaceID))
	})
	return rows, nil
}
