-- Spend control. usage_reports keeps every report once (the key of
-- idempotency is the reporting user and the report's id); usage_days sums
-- them per key and UTC day (days since 1970-01-01), updated in the report's
-- transaction, so a window is a range of days and a workspace's usage is the
-- sum of its keys' days (deleted keys' too: no foreign key). Amounts are
-- integer millionths of a dollar.
CREATE TABLE usage_reports (
    user_id      TEXT        NOT NULL,
    id           TEXT        NOT NULL,
    key_id       TEXT        NOT NULL,
    workspace_id UUID,
    cost         BIGINT      NOT NULL,
    byok         BOOLEAN     NOT NULL,
    at           TIMESTAMPTZ NOT NULL,
    received_at  TIMESTAMPTZ NOT NULL,
    CONSTRAINT usage_reports_pkey PRIMARY KEY (user_id, id),
    CONSTRAINT usage_reports_cost_check CHECK (cost >= 0)
);

CREATE TABLE usage_days (
    key_id       TEXT   NOT NULL,
    day          BIGINT NOT NULL,
    workspace_id UUID,
    cost         BIGINT NOT NULL,
    byok_cost    BIGINT NOT NULL,
    CONSTRAINT usage_days_pkey PRIMARY KEY (key_id, day)
);

CREATE INDEX usage_days_workspace ON usage_days (workspace_id, day);

CREATE TABLE workspace_budgets (
    workspace_id   UUID        NOT NULL,
    reset_interval TEXT        NOT NULL,
    id             UUID        NOT NULL,
    limit_micros   BIGINT      NOT NULL,
    created_at     TIMESTAMPTZ NOT NULL,
    updated_at     TIMESTAMPTZ NOT NULL,
    CONSTRAINT workspace_budgets_pkey PRIMARY KEY (workspace_id, reset_interval),
    CONSTRAINT workspace_budgets_workspace_id_fkey FOREIGN KEY (workspace_id) REFERENCES workspaces (id),
    CONSTRAINT workspace_budgets_interval_check CHECK (reset_interval IN ('lifetime', 'monthly', 'weekly', 'daily')),
    CONSTRAINT workspace_budgets_limit_check CHECK (limit_micros > 0)
);
