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

DELETE FROM usage_totals
WHERE (kind = 'key' AND scope_id NOT IN (SELECT id FROM api_keys WHERE limit_usd IS NOT NULL))
    OR (kind = 'workspace' AND scope_id NOT IN (SELECT workspace_id FROM workspace_budgets));

DROP TRIGGER usage_totals_key_created;
CREATE TRIGGER usage_totals_key_created AFTER INSERT ON api_keys WHEN NEW.limit_usd IS NOT NULL
BEGIN
    INSERT INTO usage_totals (scope_id, kind, total, total_byok, d_start, d_cost, d_byok, d2_start, d2_cost, d2_byok, w_start, w_cost, w_byok, w2_start, w2_cost, w2_byok, m_start, m_cost, m_byok, m2_start, m2_cost, m2_byok, changed)
    SELECT NEW.id, 'key', COALESCE(SUM(u.cost), 0), COALESCE(SUM(CASE WHEN u.byok THEN u.cost ELSE 0 END), 0),
        COALESCE(n.d, 0), COALESCE(SUM(CASE WHEN u.day = n.d THEN u.cost ELSE 0 END), 0), COALESCE(SUM(CASE WHEN u.byok AND u.day = n.d THEN u.cost ELSE 0 END), 0),
        COALESCE(n.d - 1, 0), COALESCE(SUM(CASE WHEN u.day = n.d - 1 THEN u.cost ELSE 0 END), 0), COALESCE(SUM(CASE WHEN u.byok AND u.day = n.d - 1 THEN u.cost ELSE 0 END), 0),
        COALESCE(n.wk, 0), COALESCE(SUM(CASE WHEN u.day >= n.wk AND u.day < n.wk + 7 THEN u.cost ELSE 0 END), 0), COALESCE(SUM(CASE WHEN u.byok AND u.day >= n.wk AND u.day < n.wk + 7 THEN u.cost ELSE 0 END), 0),
        COALESCE(n.wk - 7, 0), COALESCE(SUM(CASE WHEN u.day >= n.wk - 7 AND u.day < n.wk THEN u.cost ELSE 0 END), 0), COALESCE(SUM(CASE WHEN u.byok AND u.day >= n.wk - 7 AND u.day < n.wk THEN u.cost ELSE 0 END), 0),
        COALESCE(n.m, 0), COALESCE(SUM(CASE WHEN u.day >= n.m AND u.day < n.mnext THEN u.cost ELSE 0 END), 0), COALESCE(SUM(CASE WHEN u.byok AND u.day >= n.m AND u.day < n.mnext THEN u.cost ELSE 0 END), 0),
        COALESCE(n.m2, 0), COALESCE(SUM(CASE WHEN u.day >= n.m2 AND u.day < n.m THEN u.cost ELSE 0 END), 0), COALESCE(SUM(CASE WHEN u.byok AND u.day >= n.m2 AND u.day < n.m THEN u.cost ELSE 0 END), 0),
        (SELECT COALESCE(MAX(changed), 0) + 1 FROM usage_totals)
    FROM (SELECT d, d - (d + 3) % 7 AS wk,
        CAST(strftime('%s', date(d * 86400, 'unixepoch', 'start of month')) AS INTEGER) / 86400 AS m,
        CAST(strftime('%s', date(d * 86400, 'unixepoch', 'start of month', '-1 month')) AS INTEGER) / 86400 AS m2,
        CAST(strftime('%s', date(d * 86400, 'unixepoch', 'start of month', '+1 month')) AS INTEGER) / 86400 AS mnext
        FROM (SELECT MAX(day) AS d FROM usage_rollups WHERE key_id = NEW.id)) AS n LEFT JOIN usage_rollups u ON u.key_id = NEW.id
    GROUP BY n.d, n.wk, n.m, n.m2, n.mnext
    ON CONFLICT (scope_id) DO UPDATE SET changed = excluded.changed;
END;

DROP TRIGGER usage_totals_key_limit;
CREATE TRIGGER usage_totals_key_limit AFTER UPDATE OF limit_usd, limit_reset, include_byok_in_limit ON api_keys
BEGIN
    INSERT INTO usage_totals (scope_id, kind, total, total_byok, d_start, d_cost, d_byok, d2_start, d2_cost, d2_byok, w_start, w_cost, w_byok, w2_start, w2_cost, w2_byok, m_start, m_cost, m_byok, m2_start, m2_cost, m2_byok, changed)
    SELECT NEW.id, 'key', COALESCE(SUM(u.cost), 0), COALESCE(SUM(CASE WHEN u.byok THEN u.cost ELSE 0 END), 0),
        COALESCE(n.d, 0), COALESCE(SUM(CASE WHEN u.day = n.d THEN u.cost ELSE 0 END), 0), COALESCE(SUM(CASE WHEN u.byok AND u.day = n.d THEN u.cost ELSE 0 END), 0),
        COALESCE(n.d - 1, 0), COALESCE(SUM(CASE WHEN u.day = n.d - 1 THEN u.cost ELSE 0 END), 0), COALESCE(SUM(CASE WHEN u.byok AND u.day = n.d - 1 THEN u.cost ELSE 0 END), 0),
        COALESCE(n.wk, 0), COALESCE(SUM(CASE WHEN u.day >= n.wk AND u.day < n.wk + 7 THEN u.cost ELSE 0 END), 0), COALESCE(SUM(CASE WHEN u.byok AND u.day >= n.wk AND u.day < n.wk + 7 THEN u.cost ELSE 0 END), 0),
        COALESCE(n.wk - 7, 0), COALESCE(SUM(CASE WHEN u.day >= n.wk - 7 AND u.day < n.wk THEN u.cost ELSE 0 END), 0), COALESCE(SUM(CASE WHEN u.byok AND u.day >= n.wk - 7 AND u.day < n.wk THEN u.cost ELSE 0 END), 0),
        COALESCE(n.m, 0), COALESCE(SUM(CASE WHEN u.day >= n.m AND u.day < n.mnext THEN u.cost ELSE 0 END), 0), COALESCE(SUM(CASE WHEN u.byok AND u.day >= n.m AND u.day < n.mnext THEN u.cost ELSE 0 END), 0),
        COALESCE(n.m2, 0), COALESCE(SUM(CASE WHEN u.day >= n.m2 AND u.day < n.m THEN u.cost ELSE 0 END), 0), COALESCE(SUM(CASE WHEN u.byok AND u.day >= n.m2 AND u.day < n.m THEN u.cost ELSE 0 END), 0),
        (SELECT COALESCE(MAX(changed), 0) + 1 FROM usage_totals)
    FROM (SELECT d, d - (d + 3) % 7 AS wk,
        CAST(strftime('%s', date(d * 86400, 'unixepoch', 'start of month')) AS INTEGER) / 86400 AS m,
        CAST(strftime('%s', date(d * 86400, 'unixepoch', 'start of month', '-1 month')) AS INTEGER) / 86400 AS m2,
        CAST(strftime('%s', date(d * 86400, 'unixepoch', 'start of month', '+1 month')) AS INTEGER) / 86400 AS mnext
        FROM (SELECT MAX(day) AS d FROM usage_rollups WHERE key_id = NEW.id)) AS n LEFT JOIN usage_rollups u ON u.key_id = NEW.id
    GROUP BY n.d, n.wk, n.m, n.m2, n.mnext
    ON CONFLICT (scope_id) DO UPDATE SET changed = excluded.changed;
END;

DROP TRIGGER usage_totals_budget_set;
CREATE TRIGGER usage_totals_budget_set AFTER INSERT ON workspace_budgets
BEGIN
    INSERT INTO usage_totals (scope_id, kind, total, total_byok, d_start, d_cost, d_byok, d2_start, d2_cost, d2_byok, w_start, w_cost, w_byok, w2_start, w2_cost, w2_byok, m_start, m_cost, m_byok, m2_start, m2_cost, m2_byok, changed)
    SELECT NEW.workspace_id, 'workspace', COALESCE(SUM(u.cost), 0), COALESCE(SUM(CASE WHEN u.byok THEN u.cost ELSE 0 END), 0),
        COALESCE(n.d, 0), COALESCE(SUM(CASE WHEN u.day = n.d THEN u.cost ELSE 0 END), 0), COALESCE(SUM(CASE WHEN u.byok AND u.day = n.d THEN u.cost ELSE 0 END), 0),
        COALESCE(n.d - 1, 0), COALESCE(SUM(CASE WHEN u.day = n.d - 1 THEN u.cost ELSE 0 END), 0), COALESCE(SUM(CASE WHEN u.byok AND u.day = n.d - 1 THEN u.cost ELSE 0 END), 0),
        COALESCE(n.wk, 0), COALESCE(SUM(CASE WHEN u.day >= n.wk AND u.day < n.wk + 7 THEN u.cost ELSE 0 END), 0), COALESCE(SUM(CASE WHEN u.byok AND u.day >= n.wk AND u.day < n.wk + 7 THEN u.cost ELSE 0 END), 0),
        COALESCE(n.wk - 7, 0), COALESCE(SUM(CASE WHEN u.day >= n.wk - 7 AND u.day < n.wk THEN u.cost ELSE 0 END), 0), COALESCE(SUM(CASE WHEN u.byok AND u.day >= n.wk - 7 AND u.day < n.wk THEN u.cost ELSE 0 END), 0),
        COALESCE(n.m, 0), COALESCE(SUM(CASE WHEN u.day >= n.m AND u.day < n.mnext THEN u.cost ELSE 0 END), 0), COALESCE(SUM(CASE WHEN u.byok AND u.day >= n.m AND u.day < n.mnext THEN u.cost ELSE 0 END), 0),
        COALESCE(n.m2, 0), COALESCE(SUM(CASE WHEN u.day >= n.m2 AND u.day < n.m THEN u.cost ELSE 0 END), 0), COALESCE(SUM(CASE WHEN u.byok AND u.day >= n.m2 AND u.day < n.m THEN u.cost ELSE 0 END), 0),
        (SELECT COALESCE(MAX(changed), 0) + 1 FROM usage_totals)
    FROM (SELECT d, d - (d + 3) % 7 AS wk,
        CAST(strftime('%s', date(d * 86400, 'unixepoch', 'start of month')) AS INTEGER) / 86400 AS m,
        CAST(strftime('%s', date(d * 86400, 'unixepoch', 'start of month', '-1 month')) AS INTEGER) / 86400 AS m2,
        CAST(strftime('%s', date(d * 86400, 'unixepoch', 'start of month', '+1 month')) AS INTEGER) / 86400 AS mnext
        FROM (SELECT MAX(day) AS d FROM usage_rollups WHERE workspace_id = NEW.workspace_id)) AS n LEFT JOIN usage_rollups u ON u.workspace_id = NEW.workspace_id
    GROUP BY n.d, n.wk, n.m, n.m2, n.mnext
    ON CONFLICT (scope_id) DO UPDATE SET changed = excluded.changed;
END;

DROP TRIGGER usage_totals_budget_changed;
CREATE TRIGGER usage_totals_budget_changed AFTER UPDATE ON workspace_budgets
BEGIN
    INSERT INTO usage_totals (scope_id, kind, total, total_byok, d_start, d_cost, d_byok, d2_start, d2_cost, d2_byok, w_start, w_cost, w_byok, w2_start, w2_cost, w2_byok, m_start, m_cost, m_byok, m2_start, m2_cost, m2_byok, changed)
    SELECT NEW.workspace_id, 'workspace', COALESCE(SUM(u.cost), 0), COALESCE(SUM(CASE WHEN u.byok THEN u.cost ELSE 0 END), 0),
        COALESCE(n.d, 0), COALESCE(SUM(CASE WHEN u.day = n.d THEN u.cost ELSE 0 END), 0), COALESCE(SUM(CASE WHEN u.byok AND u.day = n.d THEN u.cost ELSE 0 END), 0),
        COALESCE(n.d - 1, 0), COALESCE(SUM(CASE WHEN u.day = n.d - 1 THEN u.cost ELSE 0 END), 0), COALESCE(SUM(CASE WHEN u.byok AND u.day = n.d - 1 THEN u.cost ELSE 0 END), 0),
        COALESCE(n.wk, 0), COALESCE(SUM(CASE WHEN u.day >= n.wk AND u.day < n.wk + 7 THEN u.cost ELSE 0 END), 0), COALESCE(SUM(CASE WHEN u.byok AND u.day >= n.wk AND u.day < n.wk + 7 THEN u.cost ELSE 0 END), 0),
        COALESCE(n.wk - 7, 0), COALESCE(SUM(CASE WHEN u.day >= n.wk - 7 AND u.day < n.wk THEN u.cost ELSE 0 END), 0), COALESCE(SUM(CASE WHEN u.byok AND u.day >= n.wk - 7 AND u.day < n.wk THEN u.cost ELSE 0 END), 0),
        COALESCE(n.m, 0), COALESCE(SUM(CASE WHEN u.day >= n.m AND u.day < n.mnext THEN u.cost ELSE 0 END), 0), COALESCE(SUM(CASE WHEN u.byok AND u.day >= n.m AND u.day < n.mnext THEN u.cost ELSE 0 END), 0),
        COALESCE(n.m2, 0), COALESCE(SUM(CASE WHEN u.day >= n.m2 AND u.day < n.m THEN u.cost ELSE 0 END), 0), COALESCE(SUM(CASE WHEN u.byok AND u.day >= n.m2 AND u.day < n.m THEN u.cost ELSE 0 END), 0),
        (SELECT COALESCE(MAX(changed), 0) + 1 FROM usage_totals)
    FROM (SELECT d, d - (d + 3) % 7 AS wk,
        CAST(strftime('%s', date(d * 86400, 'unixepoch', 'start of month')) AS INTEGER) / 86400 AS m,
        CAST(strftime('%s', date(d * 86400, 'unixepoch', 'start of month', '-1 month')) AS INTEGER) / 86400 AS m2,
        CAST(strftime('%s', date(d * 86400, 'unixepoch', 'start of month', '+1 month')) AS INTEGER) / 86400 AS mnext
        FROM (SELECT MAX(day) AS d FROM usage_rollups WHERE workspace_id = NEW.workspace_id)) AS n LEFT JOIN usage_rollups u ON u.workspace_id = NEW.workspace_id
    GROUP BY n.d, n.wk, n.m, n.m2, n.mnext
    ON CONFLICT (scope_id) DO UPDATE SET changed = excluded.changed;
END;
