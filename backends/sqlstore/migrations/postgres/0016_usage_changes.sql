-- usage_totals' changed column, indexed and written by every update, kept
-- PostgreSQL from updating a total in place: an update is HOT (the new row
-- on the same page, no new index entries, the old one reclaimed without a
-- vacuum) only when no indexed column changes, so every batch left a dead
-- copy of each total it touched and of both its index entries (94 MB for
-- 1,001 totals after a million reports). The change marks move to a narrow
-- table of their own, usage_changes, where each update leaves a few dozen
-- bytes behind; the totals, indexed by their key alone, are updated in the
-- room fillfactor leaves on their pages (new pages: existing ones take the
-- setting as they are rewritten).

CREATE TABLE usage_changes (
    scope_id TEXT   NOT NULL PRIMARY KEY,
    changed  BIGINT NOT NULL
);

INSERT INTO usage_changes (scope_id, changed) SELECT scope_id, changed FROM usage_totals;

CREATE INDEX usage_changes_changed ON usage_changes (changed);

DROP INDEX usage_totals_changed;
ALTER TABLE usage_totals DROP COLUMN changed;
ALTER TABLE usage_totals SET (fillfactor = 50);

CREATE OR REPLACE FUNCTION usage_totals_mark(scope TEXT, scope_kind TEXT) RETURNS void AS $$
BEGIN
    PERFORM pg_advisory_xact_lock(7236805);
    IF scope_kind = 'key' THEN
        INSERT INTO usage_totals (scope_id, kind, total, total_byok, d_start, d_cost, d_byok, d2_start, d2_cost, d2_byok, w_start, w_cost, w_byok, w2_start, w2_cost, w2_byok, m_start, m_cost, m_byok, m2_start, m2_cost, m2_byok)
        SELECT scope, 'key', COALESCE(SUM(u.cost), 0), COALESCE(SUM(CASE WHEN u.byok THEN u.cost ELSE 0 END), 0),
            COALESCE(n.d, 0), COALESCE(SUM(CASE WHEN u.day = n.d THEN u.cost ELSE 0 END), 0), COALESCE(SUM(CASE WHEN u.byok AND u.day = n.d THEN u.cost ELSE 0 END), 0),
            COALESCE(n.d - 1, 0), COALESCE(SUM(CASE WHEN u.day = n.d - 1 THEN u.cost ELSE 0 END), 0), COALESCE(SUM(CASE WHEN u.byok AND u.day = n.d - 1 THEN u.cost ELSE 0 END), 0),
            COALESCE(n.wk, 0), COALESCE(SUM(CASE WHEN u.day >= n.wk AND u.day < n.wk + 7 THEN u.cost ELSE 0 END), 0), COALESCE(SUM(CASE WHEN u.byok AND u.day >= n.wk AND u.day < n.wk + 7 THEN u.cost ELSE 0 END), 0),
            COALESCE(n.wk - 7, 0), COALESCE(SUM(CASE WHEN u.day >= n.wk - 7 AND u.day < n.wk THEN u.cost ELSE 0 END), 0), COALESCE(SUM(CASE WHEN u.byok AND u.day >= n.wk - 7 AND u.day < n.wk THEN u.cost ELSE 0 END), 0),
            COALESCE(n.m, 0), COALESCE(SUM(CASE WHEN u.day >= n.m AND u.day < n.mnext THEN u.cost ELSE 0 END), 0), COALESCE(SUM(CASE WHEN u.byok AND u.day >= n.m AND u.day < n.mnext THEN u.cost ELSE 0 END), 0),
            COALESCE(n.m2, 0), COALESCE(SUM(CASE WHEN u.day >= n.m2 AND u.day < n.m THEN u.cost ELSE 0 END), 0), COALESCE(SUM(CASE WHEN u.byok AND u.day >= n.m2 AND u.day < n.m THEN u.cost ELSE 0 END), 0)
        FROM (SELECT d, d - (d + 3) % 7 AS wk,
                CAST(extract(epoch FROM date_trunc('month', to_timestamp(d * 86400) AT TIME ZONE 'UTC')) / 86400 AS BIGINT) AS m,
                CAST(extract(epoch FROM date_trunc('month', to_timestamp(d * 86400) AT TIME ZONE 'UTC') - INTERVAL '1 month') / 86400 AS BIGINT) AS m2,
                CAST(extract(epoch FROM date_trunc('month', to_timestamp(d * 86400) AT TIME ZONE 'UTC') + INTERVAL '1 month') / 86400 AS BIGINT) AS mnext
                FROM (SELECT MAX(day) AS d FROM usage_rollups WHERE key_id = scope) AS latest) AS n LEFT JOIN usage_rollups u ON u.key_id = scope
        GROUP BY n.d, n.wk, n.m, n.m2, n.mnext
        ON CONFLICT (scope_id) DO NOTHING;
    ELSE
        INSERT INTO usage_totals (scope_id, kind, total, total_byok, d_start, d_cost, d_byok, d2_start, d2_cost, d2_byok, w_start, w_cost, w_byok, w2_start, w2_cost, w2_byok, m_start, m_cost, m_byok, m2_start, m2_cost, m2_byok)
        SELECT scope, 'workspace', COALESCE(SUM(u.cost), 0), COALESCE(SUM(CASE WHEN u.byok THEN u.cost ELSE 0 END), 0),
            COALESCE(n.d, 0), COALESCE(SUM(CASE WHEN u.day = n.d THEN u.cost ELSE 0 END), 0), COALESCE(SUM(CASE WHEN u.byok AND u.day = n.d THEN u.cost ELSE 0 END), 0),
            COALESCE(n.d - 1, 0), COALESCE(SUM(CASE WHEN u.day = n.d - 1 THEN u.cost ELSE 0 END), 0), COALESCE(SUM(CASE WHEN u.byok AND u.day = n.d - 1 THEN u.cost ELSE 0 END), 0),
            COALESCE(n.wk, 0), COALESCE(SUM(CASE WHEN u.day >= n.wk AND u.day < n.wk + 7 THEN u.cost ELSE 0 END), 0), COALESCE(SUM(CASE WHEN u.byok AND u.day >= n.wk AND u.day < n.wk + 7 THEN u.cost ELSE 0 END), 0),
            COALESCE(n.wk - 7, 0), COALESCE(SUM(CASE WHEN u.day >= n.wk - 7 AND u.day < n.wk THEN u.cost ELSE 0 END), 0), COALESCE(SUM(CASE WHEN u.byok AND u.day >= n.wk - 7 AND u.day < n.wk THEN u.cost ELSE 0 END), 0),
            COALESCE(n.m, 0), COALESCE(SUM(CASE WHEN u.day >= n.m AND u.day < n.mnext THEN u.cost ELSE 0 END), 0), COALESCE(SUM(CASE WHEN u.byok AND u.day >= n.m AND u.day < n.mnext THEN u.cost ELSE 0 END), 0),
            COALESCE(n.m2, 0), COALESCE(SUM(CASE WHEN u.day >= n.m2 AND u.day < n.m THEN u.cost ELSE 0 END), 0), COALESCE(SUM(CASE WHEN u.byok AND u.day >= n.m2 AND u.day < n.m THEN u.cost ELSE 0 END), 0)
        FROM (SELECT d, d - (d + 3) % 7 AS wk,
                CAST(extract(epoch FROM date_trunc('month', to_timestamp(d * 86400) AT TIME ZONE 'UTC')) / 86400 AS BIGINT) AS m,
                CAST(extract(epoch FROM date_trunc('month', to_timestamp(d * 86400) AT TIME ZONE 'UTC') - INTERVAL '1 month') / 86400 AS BIGINT) AS m2,
                CAST(extract(epoch FROM date_trunc('month', to_timestamp(d * 86400) AT TIME ZONE 'UTC') + INTERVAL '1 month') / 86400 AS BIGINT) AS mnext
                FROM (SELECT MAX(day) AS d FROM usage_rollups WHERE workspace_id = CAST(scope AS UUID)) AS latest) AS n LEFT JOIN usage_rollups u ON u.workspace_id = CAST(scope AS UUID)
        GROUP BY n.d, n.wk, n.m, n.m2, n.mnext
        ON CONFLICT (scope_id) DO NOTHING;
    END IF;
    INSERT INTO usage_changes (scope_id, changed) VALUES (scope, txid_current())
    ON CONFLICT (scope_id) DO UPDATE SET changed = excluded.changed;
END
$$ LANGUAGE plpgsql;

CREATE OR REPLACE FUNCTION usage_totals_key_changed() RETURNS trigger AS $$
BEGIN
    IF TG_OP = 'DELETE' THEN
        UPDATE usage_changes SET changed = txid_current() WHERE scope_id = OLD.id;
        RETURN OLD;
    END IF;
    IF TG_OP = 'UPDATE' OR NEW.limit_usd IS NOT NULL THEN
        PERFORM usage_totals_mark(NEW.id, 'key');
    END IF;
    RETURN NEW;
END
$$ LANGUAGE plpgsql;

CREATE OR REPLACE FUNCTION usage_totals_budget_changed() RETURNS trigger AS $$
BEGIN
    IF TG_OP = 'DELETE' THEN
        UPDATE usage_changes SET changed = txid_current() WHERE scope_id = CAST(OLD.workspace_id AS TEXT);
        RETURN OLD;
    END IF;
    PERFORM usage_totals_mark(CAST(NEW.workspace_id AS TEXT), 'workspace');
    RETURN NEW;
END
$$ LANGUAGE plpgsql;

CREATE OR REPLACE FUNCTION usage_totals_workspace_changed() RETURNS trigger AS $$
BEGIN
    UPDATE usage_changes SET changed = txid_current() WHERE scope_id = CAST(NEW.id AS TEXT);
    RETURN NEW;
END
$$ LANGUAGE plpgsql;
