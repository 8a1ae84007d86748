-- Raw usage reports are kept 36 days (spend.RawRetention). Deleting them
-- row by row left every deleted row to vacuum and every index entry to
-- clean; usage_reports becomes partitioned by the UTC day a report arrived,
-- and a day wholly past its retention is dropped as a table.
--
-- A partitioned table's unique keys must include the partition column, so
-- the key of idempotency (the reporting user and the report's id) moves to
-- a narrow table of its own, usage_report_ids, which a recording inserts
-- into first (ON CONFLICT DO NOTHING, as usage_reports' key did) and which
-- is pruned by received_at with the raw reports. A replay is compared with
-- what was stored through digest, the md5 of the report's content but its
-- at, and at, kept beside it because a replay that carries no time of its
-- own is not compared by it: neither needs the raw row, which may be in any
-- partition. usage_report_digest makes the digests of the rows stored so
-- far; a recording makes those of its reports in Go the same way
-- (sqlstore.appendDigest), each text preceded by its length in bytes so
-- that no two contents make the same string.
--
-- The DEFAULT partition takes a report whose day has no partition yet (the
-- pruning creates them 3 days ahead), so an insert never fails; the pruning
-- moves its rows into the day's partition when it creates one.

CREATE OR REPLACE FUNCTION usage_report_digest(key_id TEXT, cost BIGINT, byok BOOLEAN, model TEXT,
    provider_name TEXT, endpoint_id TEXT, prompt_tokens BIGINT, completion_tokens BIGINT, reasoning_tokens BIGINT)
RETURNS UUID AS $$
    SELECT CAST(md5(concat_ws(',', octet_length(key_id), key_id, cost, byok, octet_length(model), model,
        octet_length(provider_name), provider_name, octet_length(endpoint_id), endpoint_id,
        prompt_tokens, completion_tokens, reasoning_tokens)) AS UUID)
$$ LANGUAGE sql IMMUTABLE PARALLEL SAFE;

ALTER TABLE usage_reports RENAME TO usage_reports_unpartitioned;

CREATE TABLE usage_reports (
    user_id           TEXT        NOT NULL,
    id                TEXT        NOT NULL,
    key_id            TEXT        NOT NULL,
    workspace_id      UUID,
    cost              BIGINT      NOT NULL,
    byok              BOOLEAN     NOT NULL,
    at                TIMESTAMPTZ NOT NULL,
    received_at       TIMESTAMPTZ NOT NULL,
    model             TEXT        NOT NULL DEFAULT '',
    provider_name     TEXT        NOT NULL DEFAULT '',
    endpoint_id       TEXT        NOT NULL DEFAULT '',
    prompt_tokens     BIGINT      NOT NULL DEFAULT 0,
    completion_tokens BIGINT      NOT NULL DEFAULT 0,
    reasoning_tokens  BIGINT      NOT NULL DEFAULT 0,
    CONSTRAINT usage_reports_cost_check CHECK (cost >= 0)
) PARTITION BY RANGE (received_at);

CREATE TABLE usage_reports_default PARTITION OF usage_reports DEFAULT;

DO $$
DECLARE
    d DATE;
BEGIN
    FOR d IN SELECT DISTINCT CAST(received_at AT TIME ZONE 'UTC' AS DATE) FROM usage_reports_unpartitioned
        UNION SELECT CAST(now() AT TIME ZONE 'UTC' AS DATE) + g FROM generate_series(0, 3) AS g
    LOOP
        EXECUTE format('CREATE TABLE %I PARTITION OF usage_reports FOR VALUES FROM (%L) TO (%L)',
            'usage_reports_p' || to_char(d, 'YYYYMMDD'), CAST(d AS TIMESTAMP) AT TIME ZONE 'UTC',
            CAST(d + 1 AS TIMESTAMP) AT TIME ZONE 'UTC');
    END LOOP;
END
$$;

INSERT INTO usage_reports (user_id, id, key_id, workspace_id, cost, byok, at, received_at, model, provider_name,
    endpoint_id, prompt_tokens, completion_tokens, reasoning_tokens)
SELECT user_id, id, key_id, workspace_id, cost, byok, at, received_at, model, provider_name,
    endpoint_id, prompt_tokens, completion_tokens, reasoning_tokens
FROM usage_reports_unpartitioned;

CREATE TABLE usage_report_ids (
    user_id     TEXT        NOT NULL,
    id          TEXT        NOT NULL,
    received_at TIMESTAMPTZ NOT NULL,
    at          TIMESTAMPTZ NOT NULL,
    digest      UUID        NOT NULL,
    CONSTRAINT usage_report_ids_pkey PRIMARY KEY (user_id, id)
);

INSERT INTO usage_report_ids (user_id, id, received_at, at, digest)
SELECT user_id, id, received_at, at, usage_report_digest(key_id, cost, byok, model, provider_name, endpoint_id,
    prompt_tokens, completion_tokens, reasoning_tokens)
FROM usage_reports_unpartitioned;

CREATE INDEX usage_report_ids_received ON usage_report_ids (received_at);

DROP TABLE usage_reports_unpartitioned;
