-- Spend control. usage_reports keeps every report once (the key of
-- idempotency is the reporting user and the report's id); usage_days sums
-- them per key and UTC day (days since 1970-01-01), updated in the report's
-- transaction, so a window is a range of days and a workspace's usage is the
-- sum of its keys' days (deleted keys' too: no foreign key). Amounts are
-- integer millionths of a dollar.
CREATE TABLE usage_reports (
    user_id      TEXT    NOT NULL,
    id           TEXT    NOT NULL,
    key_id       TEXT    NOT NULL,
    workspace_id TEXT,
    cost         INTEGER NOT NULL CHECK (cost >= 0),
    byok         INTEGER NOT NULL,
    at           INTEGER NOT NULL,
    received_at  INTEGER NOT NULL,
    PRIMARY KEY (user_id, id)
) STRICT;

CREATE TABLE usage_days (
    key_id       TEXT    NOT NULL,
    day          INTEGER NOT NULL,
    workspace_id TEXT,
    cost         INTEGER NOT NULL,
    byok_cost    INTEGER NOT NULL,
    PRIMARY KEY (key_id, day)
) STRICT;

CREATE INDEX usage_days_workspace ON usage_days (workspace_id, day);

CREATE TABLE workspace_budgets (
    workspace_id   TEXT    NOT NULL REFERENCES workspaces (id),
    reset_interval TEXT    NOT NULL CHECK (reset_interval IN ('lifetime', 'monthly', 'weekly', 'daily')),
    id             TEXT    NOT NULL,
    limit_micros   INTEGER NOT NULL CHECK (limit_micros > 0),
    created_at     INTEGER NOT NULL,
    updated_at     INTEGER NOT NULL,
    PRIMARY KEY (workspace_id, reset_interval)
) STRICT;
