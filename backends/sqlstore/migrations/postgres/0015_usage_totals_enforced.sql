-- Running totals are kept only for what the 402 decision reads: keys with a
-- limit and workspaces with budgets. Updating a total for every key and
-- workspace a batch touched made ingest over many keys up to 2.4x slower than
-- before the totals, and nothing read most of them (GET /key's usage of a
-- key without a limit sums its daily rollups instead). A total is made from
-- the rollups when its key gets a limit or its workspace a budget, and kept
-- from then on, whatever happens to the limit, so that it is never stale.
-- Its windows are the two latest of each interval that its rollups reach
-- (the latest day it has reports of, and the windows before), so that they
-- depend on no clock: a report in a later window moves them on, as ever.
--
-- A recording updates only the totals it finds, so a total being made must
-- count every recording that did not find it: a recording holds advisory
-- lock 7236805 shared for its transaction, and making a total takes it
-- exclusively first, so it waits for the recordings in flight to commit
-- (its sums, read after, see their rollups) and those after it find it.

DELETE FROM usage_totals
WHERE (kind = 'key' AND scope_id NOT IN (SELECT id FROM api_keys WHERE limit_usd IS NOT NULL))
    OR (kind = 'workspace' AND scope_id NOT IN (SELECT CAST(workspace_id AS TEXT) FROM workspace_budgets));

CREATE OR REPLACE FUNCTION usage_totals_mark(scope TEXT, scope_kind TEXT) RETURNS void AS $$
BEGIN
    PERFORM pg_advisory_xact_lock(7236805);
    IF scope_kind = 'key' THEN
        INSERT INTO usage_totals (scope_id, kind, total, total_byok, d_start, d_cost, d_byok, d2_start, d2_cost, d2_byok, w_start, w_cost, w_byok, w2_start, w2_cost, w2_byok, m_start, m_cost, m_byok, m2_start, m2_cost, m2_byok, changed)
        SELECT scope, 'key', COALESCE(SUM(u.cost), 0), COALESCE(SUM(CASE WHEN u.byok THEN u.cost ELSE 0 END), 0),
            COALESCE(n.d, 0), COALESCE(SUM(CASE WHEN u.day = n.d THEN u.cost ELSE 0 END), 0), COALESCE(SUM(CASE WHEN u.byok AND u.day = n.d THEN u.cost ELSE 0 END), 0),
            COALESCE(n.d - 1, 0), COALESCE(SUM(CASE WHEN u.day = n.d - 1 THEN u.cost ELSE 0 END), 0), COALESCE(SUM(CASE WHEN u.byok AND u.day = n.d - 1 THEN u.cost ELSE 0 END), 0),
            COALESCE(n.wk, 0), COALESCE(SUM(CASE WHEN u.day >= n.wk AND u.day < n.wk + 7 THEN u.cost ELSE 0 END), 0), COALESCE(SUM(CASE WHEN u.byok AND u.day >= n.wk AND u.day < n.wk + 7 THEN u.cost ELSE 0 END), 0),
            COALESCE(n.wk - 7, 0), COALESCE(SUM(CASE WHEN u.day >= n.wk - 7 AND u.day < n.wk THEN u.cost ELSE 0 END), 0), COALESCE(SUM(CASE WHEN u.byok AND u.day >= n.wk - 7 AND u.day < n.wk THEN u.cost ELSE 0 END), 0),
            COALESCE(n.m, 0), COALESCE(SUM(CASE WHEN u.day >= n.m AND u.day < n.mnext THEN u.cost ELSE 0 END), 0), COALESCE(SUM(CASE WHEN u.byok AND u.day >= n.m AND u.day < n.mnext THEN u.cost ELSE 0 END), 0),
            COALESCE(n.m2, 0), COALESCE(SUM(CASE WHEN u.day >= n.m2 AND u.day < n.m THEN u.cost ELSE 0 END), 0), COALESCE(SUM(CASE WHEN u.byok AND u.day >= n.m2 AND u.day < n.m THEN u.cost ELSE 0 END), 0),
            txid_current()
        FROM (SELECT d, d - (d + 3) % 7 AS wk,
                CAST(extract(epoch FROM date_trunc('month', to_timestamp(d * 86400) AT TIME ZONE 'UTC')) / 86400 AS BIGINT) AS m,
                CAST(extract(epoch FROM date_trunc('month', to_timestamp(d * 86400) AT TIME ZONE 'UTC') - INTERVAL '1 month') / 86400 AS BIGINT) AS m2,
                CAST(extract(epoch FROM date_trunc('month', to_timestamp(d * 86400) AT TIME ZONE 'UTC') + INTERVAL '1 month') / 86400 AS BIGINT) AS mnext
                FROM (SELECT MAX(day) AS d FROM usage_rollups WHERE key_id = scope) AS latest) AS n LEFT JOIN usage_rollups u ON u.key_id = scope
        GROUP BY n.d, n.wk, n.m, n.m2, n.mnext
        ON CONFLICT (scope_id) DO UPDATE SET changed = excluded.changed;
    ELSE
        INSERT INTO usage_totals (scope_id, kind, total, total_byok, d_start, d_cost, d_byok, d2_start, d2_cost, d2_byok, w_start, w_cost, w_byok, w2_start, w2_cost, w2_byok, m_start, m_cost, m_byok, m2_start, m2_cost, m2_byok, changed)
        SELECT scope, 'workspace', COALESCE(SUM(u.cost), 0), COALESCE(SUM(CASE WHEN u.byok THEN u.cost ELSE 0 END), 0),
            COALESCE(n.d, 0), COALESCE(SUM(CASE WHEN u.day = n.d THEN u.cost ELSE 0 END), 0), COALESCE(SUM(CASE WHEN u.byok AND u.day = n.d THEN u.cost ELSE 0 END), 0),
            COALESCE(n.d - 1, 0), COALESCE(SUM(CASE WHEN u.day = n.d - 1 THEN u.cost ELSE 0 END), 0), COALESCE(SUM(CASE WHEN u.byok AND u.day = n.d - 1 THEN u.cost ELSE 0 END), 0),
            COALESCE(n.wk, 0), COALESCE(SUM(CASE WHEN u.day >= n.wk AND u.day < n.wk + 7 THEN u.cost ELSE 0 END), 0), COALESCE(SUM(CASE WHEN u.byok AND u.day >= n.wk AND u.day < n.wk + 7 THEN u.cost ELSE 0 END), 0),
            COALESCE(n.wk - 7, 0), COALESCE(SUM(CASE WHEN u.day >= n.wk - 7 AND u.day < n.wk THEN u.cost ELSE 0 END), 0), COALESCE(SUM(CASE WHEN u.byok AND u.day >= n.wk - 7 AND u.day < n.wk THEN u.cost ELSE 0 END), 0),
            COALESCE(n.m, 0), COALESCE(SUM(CASE WHEN u.day >= n.m AND u.day < n.mnext THEN u.cost ELSE 0 END), 0), COALESCE(SUM(CASE WHEN u.byok AND u.day >= n.m AND u.day < n.mnext THEN u.cost ELSE 0 END), 0),
            COALESCE(n.m2, 0), COALESCE(SUM(CASE WHEN u.day >= n.m2 AND u.day < n.m THEN u.cost ELSE 0 END), 0), COALESCE(SUM(CASE WHEN u.byok AND u.day >= n.m2 AND u.day < n.m THEN u.cost ELSE 0 END), 0),
            txid_current()
        FROM (SELECT d, d - (d + 3) % 7 AS wk,
                CAST(extract(epoch FROM date_trunc('month', to_timestamp(d * 86400) AT TIME ZONE 'UTC')) / 86400 AS BIGINT) AS m,
                CAST(extract(epoch FROM date_trunc('month', to_timestamp(d * 86400) AT TIME ZONE 'UTC') - INTERVAL '1 month') / 86400 AS BIGINT) AS m2,
                CAST(extract(epoch FROM date_trunc('month', to_timestamp(d * 86400) AT TIME ZONE 'UTC') + INTERVAL '1 month') / 86400 AS BIGINT) AS mnext
                FROM (SELECT MAX(day) AS d FROM usage_rollups WHERE workspace_id = CAST(scope AS UUID)) AS latest) AS n LEFT JOIN usage_rollups u ON u.workspace_id = CAST(scope AS UUID)
        GROUP BY n.d, n.wk, n.m, n.m2, n.mnext
        ON CONFLICT (scope_id) DO UPDATE SET changed = excluded.changed;
    END IF;
END
$$ LANGUAGE plpgsql;
