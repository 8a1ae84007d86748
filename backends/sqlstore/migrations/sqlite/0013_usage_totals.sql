-- Running totals: what each key and each workspace has spent all time and
-- in the two latest daily, weekly and monthly windows reports fell in
-- (d_start is the first day of the newest daily window, d2_ of the one
-- before; two suffice, as a report is at most a minute ahead). Recording
-- a report updates them in its transaction, so the 402 refresh reads a
-- row per key or workspace and never sums history. changed says when a
-- row, or the limit or budgets it answers for (triggers below), last
-- changed: the refresh reads only the rows changed since its last read.
-- On SQLite changed is a sequence: one writer assigns them in commit order.

CREATE TABLE usage_totals (
    scope_id   TEXT    NOT NULL PRIMARY KEY,
    kind       TEXT    NOT NULL CHECK (kind IN ('key', 'workspace')),
    total      INTEGER NOT NULL DEFAULT 0,
    total_byok INTEGER NOT NULL DEFAULT 0,
    d_start    INTEGER NOT NULL DEFAULT 0,
    d_cost     INTEGER NOT NULL DEFAULT 0,
    d_byok     INTEGER NOT NULL DEFAULT 0,
    d2_start   INTEGER NOT NULL DEFAULT 0,
    d2_cost    INTEGER NOT NULL DEFAULT 0,
    d2_byok    INTEGER NOT NULL DEFAULT 0,
    w_start    INTEGER NOT NULL DEFAULT 0,
    w_cost     INTEGER NOT NULL DEFAULT 0,
    w_byok     INTEGER NOT NULL DEFAULT 0,
    w2_start   INTEGER NOT NULL DEFAULT 0,
    w2_cost    INTEGER NOT NULL DEFAULT 0,
    w2_byok    INTEGER NOT NULL DEFAULT 0,
    m_start    INTEGER NOT NULL DEFAULT 0,
    m_cost     INTEGER NOT NULL DEFAULT 0,
    m_byok     INTEGER NOT NULL DEFAULT 0,
    m2_start   INTEGER NOT NULL DEFAULT 0,
    m2_cost    INTEGER NOT NULL DEFAULT 0,
    m2_byok    INTEGER NOT NULL DEFAULT 0,
    changed    INTEGER NOT NULL
) STRICT;

CREATE INDEX usage_totals_changed ON usage_totals (changed);

WITH n AS (SELECT d, d - (d + 3) % 7 AS wk, CAST(strftime('%s', date('now', 'start of month')) AS INTEGER) / 86400 AS m, CAST(strftime('%s', date('now', 'start of month', '+1 month')) AS INTEGER) / 86400 AS mnext FROM (SELECT CAST(strftime('%s', 'now') AS INTEGER) / 86400 AS d) AS today)
INSERT INTO usage_totals (scope_id, kind, total, total_byok, d_start, d_cost, d_byok, w_start, w_cost, w_byok, m_start, m_cost, m_byok, changed)
SELECT u.key_id, 'key', SUM(u.cost), SUM(CASE WHEN u.byok THEN u.cost ELSE 0 END),
    n.d, SUM(CASE WHEN u.day = n.d THEN u.cost ELSE 0 END), SUM(CASE WHEN u.byok AND u.day = n.d THEN u.cost ELSE 0 END),
    n.wk, SUM(CASE WHEN u.day >= n.wk AND u.day < n.wk + 7 THEN u.cost ELSE 0 END), SUM(CASE WHEN u.byok AND u.day >= n.wk AND u.day < n.wk + 7 THEN u.cost ELSE 0 END),
    n.m, SUM(CASE WHEN u.day >= n.m AND u.day < n.mnext THEN u.cost ELSE 0 END), SUM(CASE WHEN u.byok AND u.day >= n.m AND u.day < n.mnext THEN u.cost ELSE 0 END), 1
FROM usage_rollups u CROSS JOIN n GROUP BY u.key_id, n.d, n.wk, n.m, n.mnext;

WITH n AS (SELECT d, d - (d + 3) % 7 AS wk, CAST(strftime('%s', date('now', 'start of month')) AS INTEGER) / 86400 AS m, CAST(strftime('%s', date('now', 'start of month', '+1 month')) AS INTEGER) / 86400 AS mnext FROM (SELECT CAST(strftime('%s', 'now') AS INTEGER) / 86400 AS d) AS today)
INSERT INTO usage_totals (scope_id, kind, total, total_byok, d_start, d_cost, d_byok, w_start, w_cost, w_byok, m_start, m_cost, m_byok, changed)
SELECT u.workspace_id, 'workspace', SUM(u.cost), SUM(CASE WHEN u.byok THEN u.cost ELSE 0 END),
    n.d, SUM(CASE WHEN u.day = n.d THEN u.cost ELSE 0 END), SUM(CASE WHEN u.byok AND u.day = n.d THEN u.cost ELSE 0 END),
    n.wk, SUM(CASE WHEN u.day >= n.wk AND u.day < n.wk + 7 THEN u.cost ELSE 0 END), SUM(CASE WHEN u.byok AND u.day >= n.wk AND u.day < n.wk + 7 THEN u.cost ELSE 0 END),
    n.m, SUM(CASE WHEN u.day >= n.m AND u.day < n.mnext THEN u.cost ELSE 0 END), SUM(CASE WHEN u.byok AND u.day >= n.m AND u.day < n.mnext THEN u.cost ELSE 0 END), 1
FROM usage_rollups u CROSS JOIN n WHERE u.workspace_id IS NOT NULL
GROUP BY u.workspace_id, n.d, n.wk, n.m, n.mnext;

INSERT INTO usage_totals (scope_id, kind, changed)
SELECT id, 'key', 1 FROM api_keys WHERE limit_usd IS NOT NULL
ON CONFLICT (scope_id) DO NOTHING;

INSERT INTO usage_totals (scope_id, kind, changed)
SELECT DISTINCT workspace_id, 'workspace', 1 FROM workspace_budgets WHERE true
ON CONFLICT (scope_id) DO NOTHING;

-- A change of a key's limit, of a budget or of a workspace's BYOK setting
-- marks the row of the key or workspace it is counted on.
CREATE TRIGGER usage_totals_key_created AFTER INSERT ON api_keys WHEN NEW.limit_usd IS NOT NULL
BEGIN
    INSERT INTO usage_totals (scope_id, kind, changed)
    VALUES (NEW.id, 'key', (SELECT COALESCE(MAX(changed), 0) + 1 FROM usage_totals))
    ON CONFLICT (scope_id) DO UPDATE SET changed = excluded.changed;
END;

CREATE TRIGGER usage_totals_key_limit AFTER UPDATE OF limit_usd, limit_reset, include_byok_in_limit ON api_keys
BEGIN
    INSERT INTO usage_totals (scope_id, kind, changed)
    VALUES (NEW.id, 'key', (SELECT COALESCE(MAX(changed), 0) + 1 FROM usage_totals))
    ON CONFLICT (scope_id) DO UPDATE SET changed = excluded.changed;
END;

CREATE TRIGGER usage_totals_key_deleted AFTER DELETE ON api_keys
BEGIN
    UPDATE usage_totals SET changed = (SELECT COALESCE(MAX(changed), 0) + 1 FROM usage_totals) WHERE scope_id = OLD.id;
END;

CREATE TRIGGER usage_totals_budget_set AFTER INSERT ON workspace_budgets
BEGIN
    INSERT INTO usage_totals (scope_id, kind, changed)
    VALUES (NEW.workspace_id, 'workspace', (SELECT COALESCE(MAX(changed), 0) + 1 FROM usage_totals))
    ON CONFLICT (scope_id) DO UPDATE SET changed = excluded.changed;
END;

CREATE TRIGGER usage_totals_budget_changed AFTER UPDATE ON workspace_budgets
BEGIN
    INSERT INTO usage_totals (scope_id, kind, changed)
    VALUES (NEW.workspace_id, 'workspace', (SELECT COALESCE(MAX(changed), 0) + 1 FROM usage_totals))
    ON CONFLICT (scope_id) DO UPDATE SET changed = excluded.changed;
END;

CREATE TRIGGER usage_totals_budget_deleted AFTER DELETE ON workspace_budgets
BEGIN
    UPDATE usage_totals SET changed = (SELECT COALESCE(MAX(changed), 0) + 1 FROM usage_totals)
    WHERE scope_id = OLD.workspace_id;
END;

CREATE TRIGGER usage_totals_workspace_byok AFTER UPDATE OF include_byok_in_budgets ON workspaces
BEGIN
    UPDATE usage_totals SET changed = (SELECT COALESCE(MAX(changed), 0) + 1 FROM usage_totals) WHERE scope_id = NEW.id;
END;
