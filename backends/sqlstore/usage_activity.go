package sqlstore

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/aigateway/gateway/policy/spend"
)

// scopeFilter is the condition on usage_rollups u of scope's usage, with
// its one parameter numbered n: the key's rows, the workspace's (its
// deleted keys' too), or the user's (its workspaces' and the keys it holds
// outside any). ok is false for a workspace id that names none.
func scopeFilter(scope spend.DailyScope, n int) (where string, arg any, ok bool) {
	p := fmt.Sprintf("$%d", n)
	switch {
	case scope.KeyID != "":
		return `u.key_id = ` + p, scope.KeyID, true
	case scope.WorkspaceID != "":
		ws, ok := canonicalUUID(scope.WorkspaceID)
		return `u.workspace_id = ` + p, ws, ok
	}
	return `(u.workspace_id IN (SELECT id FROM workspaces WHERE created_by = ` + p + `)
		OR u.key_id IN (SELECT id FROM api_keys WHERE user_id = ` + p + `))`, scope.UserID, true
}

// Activity sums scope's rollups per day, model, endpoint and provider (and
// workspace) from first to last, in one grouped query.
func (s *Store) Activity(ctx context.Context, scope spend.DailyScope, first, last int64, byWorkspace bool) (_ []spend.ActivityRow, err error) {
	defer s.classify(&err)
	where, arg, ok := scopeFilter(scope, 3)
	if !ok {
		return nil, nil
	}
	ws := `NULL`
	group := `u.day, u.model, u.endpoint_id, u.provider_name`
	if byWorkspace {
		ws, group = `u.workspace_id`, group+`, u.workspace_id`
	}
	rows, err := s.r.QueryContext(ctx, `SELECT u.day, u.model, u.endpoint_id, u.provider_name, `+ws+`,
		CAST(SUM(u.cost) AS BIGINT), CAST(SUM(CASE WHEN u.byok THEN u.cost ELSE 0 END) AS BIGINT),
		CAST(SUM(u.requests) AS BIGINT), CAST(SUM(u.prompt_tokens) AS BIGINT),
		CAST(SUM(u.completion_tokens) AS BIGINT), CAST(SUM(u.reasoning_tokens) AS BIGINT)
		FROM usage_rollups u WHERE u.day >= $1 AND u.day <= $2 AND `+where+`
		GROUP BY `+group, first, last, arg)
	if err != nil {
		return nil, fmt.Errorf("sqlstore: activity: %w", err)
	}
	defer rows.Close()
	var out []spend.ActivityRow
	for rows.Next() {
		var r spend.ActivityRow
		var wsID sql.NullString
		if err := rows.Scan(&r.Day, &r.Model, &r.Endpoint, &r.Provider, &wsID, (*int64)(&r.Cost), (*int64)(&r.BYOK),
			&r.Requests, &r.PromptTokens, &r.CompletionTokens, &r.ReasoningTokens); err != nil {
			return nil, fmt.Errorf("sqlstore: activity: %w", err)
		}
		r.WorkspaceID = canonicalOr(wsID.String)
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlstore: activity: %w", err)
	}
	return out, nil
}
