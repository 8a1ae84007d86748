-- What was served: a report may name its model, provider and endpoint and
-- count its tokens, and the daily sums become a rollup per (key, day,
-- model, provider, endpoint, byok) with the count of requests and the sums
-- of tokens beside the cost. The rollup replaces usage_days: it is rebuilt
-- from usage_reports, which holds every report counted so far (usage_days
-- was their sum, kept in the same transactions).
ALTER TABLE usage_reports ADD COLUMN model TEXT NOT NULL DEFAULT '';
ALTER TABLE usage_reports ADD COLUMN provider_name TEXT NOT NULL DEFAULT '';
ALTER TABLE usage_reports ADD COLUMN endpoint_id TEXT NOT NULL DEFAULT '';
ALTER TABLE usage_reports ADD COLUMN prompt_tokens BIGINT NOT NULL DEFAULT 0;
ALTER TABLE usage_reports ADD COLUMN completion_tokens BIGINT NOT NULL DEFAULT 0;
ALTER TABLE usage_reports ADD COLUMN reasoning_tokens BIGINT NOT NULL DEFAULT 0;

CREATE TABLE usage_rollups (
    key_id            TEXT    NOT NULL,
    day               BIGINT  NOT NULL,
    model             TEXT    NOT NULL,
    provider_name     TEXT    NOT NULL,
    endpoint_id       TEXT    NOT NULL,
    byok              BOOLEAN NOT NULL,
    workspace_id      UUID,
    requests          BIGINT  NOT NULL,
    cost              BIGINT  NOT NULL,
    prompt_tokens     BIGINT  NOT NULL,
    completion_tokens BIGINT  NOT NULL,
    reasoning_tokens  BIGINT  NOT NULL,
    CONSTRAINT usage_rollups_pkey PRIMARY KEY (key_id, day, model, provider_name, endpoint_id, byok)
);

CREATE INDEX usage_rollups_workspace ON usage_rollups (workspace_id, day);

INSERT INTO usage_rollups (key_id, day, model, provider_name, endpoint_id, byok, workspace_id, requests, cost,
    prompt_tokens, completion_tokens, reasoning_tokens)
SELECT key_id, CAST(floor(extract(epoch FROM at) / 86400) AS BIGINT), '', '', '', byok,
    CAST(MAX(CAST(workspace_id AS TEXT)) AS UUID), COUNT(*), SUM(cost), 0, 0, 0
FROM usage_reports GROUP BY key_id, CAST(floor(extract(epoch FROM at) / 86400) AS BIGINT), byok;

DROP TABLE usage_days;
