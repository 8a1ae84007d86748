-- Idempotency records move to a table keyed by scope, so a key used for a
-- creation and the same key used for an update are two records, and each
-- record keeps the Workspace it answered with (its JSON) instead of an HTTP
-- status and body. The old table is left as it is: a binary of the previous
-- release, during a rolling deploy, still writes there. Its creation records
-- are copied, unwrapped from {"data":...} byte for byte (the first 8 bytes
-- and the last one), so a retry after the upgrade is still replayed.
CREATE TABLE idempotency_records (
    user_id      TEXT        NOT NULL,
    scope        TEXT        NOT NULL,
    idem_key     TEXT        NOT NULL,
    request_hash TEXT        NOT NULL,
    workspace    BYTEA       NOT NULL,
    created_at   TIMESTAMPTZ NOT NULL,
    CONSTRAINT idempotency_records_pkey PRIMARY KEY (user_id, scope, idem_key),
    CONSTRAINT idempotency_records_user_id_fkey FOREIGN KEY (user_id) REFERENCES users (id)
);

INSERT INTO idempotency_records (user_id, scope, idem_key, request_hash, workspace, created_at)
SELECT user_id, 'workspace.create', idem_key, request_hash, substring(body FROM 9 FOR length(body) - 9), created_at
FROM idempotency
WHERE status = 201 AND substring(body FROM 1 FOR 8) = convert_to('{"data":', 'UTF8');
