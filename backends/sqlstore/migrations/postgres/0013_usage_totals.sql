-- Running totals: what each key and each workspace has spent all time and
-- in the two latest daily, weekly and monthly windows reports fell in
-- (d_start is the first day of the newest daily window, d2_ of the one
-- before; two suffice, as a report is at most a minute ahead). Recording
-- a report updates them in its transaction, so the 402 refresh reads a
-- row per key or workspace and never sums history. changed says when a
-- row, or the limit or budgets it answers for (triggers below), last
-- changed: the refresh reads only the rows changed since its last read.
-- On PostgreSQL changed is the id of the writing transaction (txid_current): the
-- refresh reads the rows of every transaction not finished at its last read.

CREATE TABLE usage_totals (
    scope_id   TEXT    NOT NULL PRIMARY KEY,
    kind       TEXT    NOT NULL CHECK (kind IN ('key', 'workspace')),
    total      BIGINT NOT NULL DEFAULT 0,
    total_byok BIGINT NOT NULL DEFAULT 0,
    d_start    BIGINT NOT NULL DEFAULT 0,
    d_cost     BIGINT NOT NULL DEFAULT 0,
    d_byok     BIGINT NOT NULL DEFAULT 0,
    d2_start   BIGINT NOT NULL DEFAULT 0,
    d2_cost    BIGINT NOT NULL DEFAULT 0,
    d2_byok    BIGINT NOT NULL DEFAULT 0,
    w_start    BIGINT NOT NULL DEFAULT 0,
    w_cost     BIGINT NOT NULL DEFAULT 0,
    w_byok     BIGINT NOT NULL DEFAULT 0,
    w2_start   BIGINT NOT NULL DEFAULT 0,
    w2_cost    BIGINT NOT NULL DEFAULT 0,
    w2_byok    BIGINT NOT NULL DEFAULT 0,
    m_start    BIGINT NOT NULL DEFAULT 0,
    m_cost     BIGINT NOT NULL DEFAULT 0,
    m_byok     BIGINT NOT NULL DEFAULT 0,
    m2_start   BIGINT NOT NULL DEFAULT 0,
    m2_cost    BIGINT NOT NULL DEFAULT 0,
    m2_byok    BIGINT NOT NULL DEFAULT 0,
    changed    BIGINT NOT NULL
);

CREATE INDEX usage_totals_changed ON usage_totals (changed);

WITH n AS (SELECT d, d - (d + 3) % 7 AS wk, CAST(extract(epoch FROM date_trunc('month', now() AT TIME ZONE 'UTC')) / 86400 AS BIGINT) AS m, CAST(extract(epoch FROM date_trunc('month', now() AT TIME ZONE 'UTC') + INTERVAL '1 month') / 86400 AS BIGINT) AS mnext FROM (SELECT CAST(floor(extract(epoch FROM now()) / 86400) AS BIGINT) AS d) AS today)
INSERT INTO usage_totals (scope_id, kind, total, total_byok, d_start, d_cost, d_byok, w_start, w_cost, w_byok, m_start, m_cost, m_byok, changed)
SELECT u.key_id, 'key', SUM(u.cost), SUM(CASE WHEN u.byok THEN u.cost ELSE 0 END),
    n.d, SUM(CASE WHEN u.day = n.d THEN u.cost ELSE 0 END), SUM(CASE WHEN u.byok AND u.day = n.d THEN u.cost ELSE 0 END),
    n.wk, SUM(CASE WHEN u.day >= n.wk AND u.day < n.wk + 7 THEN u.cost ELSE 0 END), SUM(CASE WHEN u.byok AND u.day >= n.wk AND u.day < n.wk + 7 THEN u.cost ELSE 0 END),
    n.m, SUM(CASE WHEN u.day >= n.m AND u.day < n.mnext THEN u.cost ELSE 0 END), SUM(CASE WHEN u.byok AND u.day >= n.m AND u.day < n.mnext THEN u.cost ELSE 0 END), txid_current()
FROM usage_rollups u CROSS JOIN n GROUP BY u.key_id, n.d, n.wk, n.m, n.mnext;

WITH n AS (SELECT d, d - (d + 3) % 7 AS wk, CAST(extract(epoch FROM date_trunc('month', now() AT TIME ZONE 'UTC')) / 86400 AS BIGINT) AS m, CAST(extract(epoch FROM date_trunc('month', now() AT TIME ZONE 'UTC') + INTERVAL '1 month') / 86400 AS BIGINT) AS mnext FROM (SELECT CAST(floor(extract(epoch FROM now()) / 86400) AS BIGINT) AS d) AS today)
INSERT INTO usage_totals (scope_id, kind, total, total_byok, d_start, d_cost, d_byok, w_start, w_cost, w_byok, m_start, m_cost, m_byok, changed)
SELECT CAST(u.workspace_id AS TEXT), 'workspace', SUM(u.cost), SUM(CASE WHEN u.byok THEN u.cost ELSE 0 END),
    n.d, SUM(CASE WHEN u.day = n.d THEN u.cost ELSE 0 END), SUM(CASE WHEN u.byok AND u.day = n.d THEN u.cost ELSE 0 END),
    n.wk, SUM(CASE WHEN u.day >= n.wk AND u.day < n.wk + 7 THEN u.cost ELSE 0 END), SUM(CASE WHEN u.byok AND u.day >= n.wk AND u.day < n.wk + 7 THEN u.cost ELSE 0 END),
    n.m, SUM(CASE WHEN u.day >= n.m AND u.day < n.mnext THEN u.cost ELSE 0 END), SUM(CASE WHEN u.byok AND u.day >= n.m AND u.day < n.mnext THEN u.cost ELSE 0 END), txid_current()
FROM usage_rollups u CROSS JOIN n WHERE u.workspace_id IS NOT NULL
GROUP BY u.workspace_id, n.d, n.wk, n.m, n.mnext;

INSERT INTO usage_totals (scope_id, kind, changed)
SELECT id, 'key', txid_current() FROM api_keys WHERE limit_usd IS NOT NULL
ON CONFLICT (scope_id) DO NOTHING;

INSERT INTO usage_totals (scope_id, kind, changed)
SELECT DISTINCT CAST(workspace_id AS TEXT), 'workspace', txid_current() FROM workspace_budgets WHERE true
ON CONFLICT (scope_id) DO NOTHING;

-- A change of a key's limit, of a budget or of a workspace's BYOK setting
-- marks the row of the key or workspace it is counted on.
CREATE FUNCTION usage_totals_mark(scope TEXT, scope_kind TEXT) RETURNS void AS $$
    INSERT INTO usage_totals (scope_id, kind, changed) VALUES (scope, scope_kind, txid_current())
    ON CONFLICT (scope_id) DO UPDATE SET changed = excluded.changed;
$$ LANGUAGE sql;

CREATE FUNCTION usage_totals_key_changed() RETURNS trigger AS $$
BEGIN
    IF TG_OP = 'DELETE' THEN
        UPDATE usage_totals SET changed = txid_current() WHERE scope_id = OLD.id;
        RETURN OLD;
    END IF;
    IF TG_OP = 'UPDATE' OR NEW.limit_usd IS NOT NULL THEN
        PERFORM usage_totals_mark(NEW.id, 'key');
    END IF;
    RETURN NEW;
END
$$ LANGUAGE plpgsql;

CREATE TRIGGER usage_totals_key AFTER INSERT OR DELETE OR UPDATE OF limit_usd, limit_reset, include_byok_in_limit
    ON api_keys FOR EACH ROW EXECUTE FUNCTION usage_totals_key_changed();

CREATE FUNCTION usage_totals_budget_changed() RETURNS trigger AS $$
BEGIN
    IF TG_OP = 'DELETE' THEN
        UPDATE usage_totals SET changed = txid_current() WHERE scope_id = CAST(OLD.workspace_id AS TEXT);
        RETURN OLD;
    END IF;
    PERFORM usage_totals_mark(CAST(NEW.workspace_id AS TEXT), 'workspace');
    RETURN NEW;
END
$$ LANGUAGE plpgsql;

CREATE TRIGGER usage_totals_budget AFTER INSERT OR UPDATE OR DELETE
    ON workspace_budgets FOR EACH ROW EXECUTE FUNCTION usage_totals_budget_changed();

CREATE FUNCTION usage_totals_workspace_changed() RETURNS trigger AS $$
BEGIN
    UPDATE usage_totals SET changed = txid_current() WHERE scope_id = CAST(NEW.id AS TEXT);
    RETURN NEW;
END
$$ LANGUAGE plpgsql;

CREATE TRIGGER usage_totals_workspace AFTER UPDATE OF include_byok_in_budgets
    ON workspaces FOR EACH ROW EXECUTE FUNCTION usage_totals_workspace_changed();
