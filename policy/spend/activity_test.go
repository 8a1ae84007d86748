package spend

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/aigateway/gateway/policy/keys"
	"github.com/aigateway/gateway/workspace"
)

// activityStore answers Activity with the rows it holds and records what
// it was asked.
type activityStore struct {
	dailyStore
	rows        []ActivityRow
	scope       DailyScope
	first, last int64
	byWS        bool
}

func (a *activityStore) Activity(_ context.Context, scope DailyScope, first, last int64, byWS bool) ([]ActivityRow, error) {
	a.scope, a.first, a.last, a.byWS = scope, first, last, byWS
	return append([]ActivityRow(nil), a.rows...), nil
}

func TestActivity(t *testing.T) {
	st := &activityStore{dailyStore: dailyStore{keysOf: map[string]map[string]string{"u1": {ownKey: "w1"}, "u2": {theirKey: "w9"}}}}
	today := Day(now)
	st.rows = []ActivityRow{
		{Day: today - 2, Model: "b/x", Cost: 5},
		{Day: today - 1, Model: "b/x", Cost: 5},
		{Day: today - 1, Model: "a/x", Cost: 5},
		{Day: today - 1, Model: "c/x", Cost: 9},
	}
	svc := NewService(st, nil, nil)
	svc.now = func() time.Time { return now }
	ctx := context.Background()
	mgmt := &keys.APIKey{ID: "00000000000000c1", UserID: "u1", Role: keys.RoleManagement}
	rows, err := svc.Activity(ctx, mgmt, ActivityQuery{}, workspacesOf)
	if err != nil {
		t.Fatal(err)
	}
	// Newest day first, then the most spent, then by model.
	var order []string
	for _, r := range rows {
		order = append(order, time.Unix(r.Day*86400, 0).UTC().Format("01-02")+" "+r.Model)
	}
	if want := "[11-24 c/x 11-24 a/x 11-24 b/x 11-23 b/x]"; fmt.Sprint(order) != want {
		t.Errorf("order %s, want %s", fmt.Sprint(order), want)
	}
	// The last 30 completed days: today is not one of them.
	if st.last != today-1 || st.first != today-30 || st.scope != (DailyScope{UserID: "u1"}) || st.byWS {
		t.Errorf("asked %+v days %d to %d (today %d)", st.scope, st.first, st.last, today)
	}
	day := now.AddDate(0, 0, -30).Truncate(24 * time.Hour)
	if _, err := svc.Activity(ctx, mgmt, ActivityQuery{Date: day, Workspace: "lab", ByWorkspace: true}, workspacesOf); err != nil ||
		st.first != Day(day) || st.last != Day(day) || st.scope.WorkspaceID != "w2" || !st.byWS {
		t.Errorf("one day of a workspace: %v, asked %+v days %d to %d", err, st.scope, st.first, st.last)
	}
	for name, c := range map[string]struct {
		caller *keys.APIKey
		q      ActivityQuery
		want   error
	}{
		"standard key":        {&keys.APIKey{ID: ownKey, UserID: "u1", Role: keys.RoleStandard}, ActivityQuery{}, keys.ErrForbidden},
		"another user_id":     {mgmt, ActivityQuery{UserID: "u2"}, ErrOtherUser},
		"today":               {mgmt, ActivityQuery{Date: now.Truncate(24 * time.Hour)}, ErrInvalidQuery},
		"31 days ago":         {mgmt, ActivityQuery{Date: now.AddDate(0, 0, -31)}, ErrInvalidQuery},
		"another user's key":  {mgmt, ActivityQuery{KeyID: theirKey}, keys.ErrKeyNotFound},
		"another user's team": {mgmt, ActivityQuery{Workspace: "theirs"}, workspace.ErrNotFound},
		"key and workspace":   {mgmt, ActivityQuery{KeyID: ownKey, Workspace: "lab"}, ErrInvalidQuery},
	} {
		if _, err := svc.Activity(ctx, c.caller, c.q, workspacesOf); !errors.Is(err, c.want) {
			t.Errorf("%s: %v, want %v", name, err, c.want)
		}
	}
	if _, err := svc.Activity(ctx, mgmt, ActivityQuery{UserID: "u1", KeyID: ownKey}, workspacesOf); err != nil || st.scope.KeyID != ownKey {
		t.Errorf("own user_id and key: %v, %+v", err, st.scope)
	}
}
