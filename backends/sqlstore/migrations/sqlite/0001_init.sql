-- The metadata schema on SQLite. Tables are STRICT so a wrongly typed value is
-- refused instead of silently stored under another affinity. Times are
-- INTEGER Unix microseconds (UTC): they compare and sort as numbers, and the
-- precision matches PostgreSQL's timestamptz. Booleans are INTEGER 0/1.
-- String lists are JSON text; NULL and '[]' mean different things.

CREATE TABLE users (
    id         TEXT    NOT NULL PRIMARY KEY,
    created_at INTEGER NOT NULL
) STRICT;

CREATE TABLE workspaces (
    id                                  TEXT    NOT NULL PRIMARY KEY,
    name                                TEXT    NOT NULL,
    slug                                TEXT    NOT NULL,
    description                         TEXT    NOT NULL,
    default_text_model                  TEXT,
    default_image_model                 TEXT,
    default_provider_sort               TEXT,
    default_guardrail_id                TEXT    NOT NULL,
    created_by                          TEXT    NOT NULL REFERENCES users (id),
    created_at                          INTEGER NOT NULL,
    updated_at                          INTEGER,
    include_byok_in_budgets             INTEGER NOT NULL,
    io_logging_api_key_ids              TEXT,
    io_logging_sampling_rate            REAL    NOT NULL,
    is_data_discount_logging_enabled    INTEGER NOT NULL,
    is_observability_broadcast_enabled  INTEGER NOT NULL,
    is_observability_io_logging_enabled INTEGER NOT NULL,
    -- The slug race is decided here, by the insert. It is the table's only
    -- unique constraint besides the primary key: the store tells the two apart
    -- by SQLite's extended result code (UNIQUE vs PRIMARYKEY).
    UNIQUE (created_by, slug)
) STRICT;

CREATE TABLE api_keys (
    id           TEXT    NOT NULL PRIMARY KEY,
    user_id      TEXT    NOT NULL REFERENCES users (id),
    name         TEXT    NOT NULL,
    role         TEXT    NOT NULL CHECK (role IN ('management', 'standard')),
    workspace_id TEXT REFERENCES workspaces (id),
    models       TEXT,
    hash         BLOB    NOT NULL CHECK (length(hash) = 32),
    disabled     INTEGER NOT NULL DEFAULT 0,
    created_at   INTEGER NOT NULL
) STRICT;

CREATE INDEX api_keys_user_id ON api_keys (user_id);

CREATE TABLE idempotency (
    user_id      TEXT    NOT NULL REFERENCES users (id),
    idem_key     TEXT    NOT NULL,
    request_hash TEXT    NOT NULL,
    status       INTEGER NOT NULL,
    body         BLOB    NOT NULL,
    created_at   INTEGER NOT NULL,
    PRIMARY KEY (user_id, idem_key)
) STRICT;

CREATE TABLE files (
    id           TEXT    NOT NULL PRIMARY KEY,
    workspace_id TEXT    NOT NULL REFERENCES workspaces (id),
    key_id       TEXT    NOT NULL,
    filename     TEXT    NOT NULL,
    mime_type    TEXT    NOT NULL,
    size         INTEGER NOT NULL CHECK (size >= 0),
    sha256       TEXT    NOT NULL,
    backend      TEXT    NOT NULL,
    object_key   TEXT    NOT NULL,
    created_at   INTEGER NOT NULL
) STRICT;

CREATE INDEX files_workspace_id ON files (workspace_id);

-- One row per workspace that ever reserved quota. stored_bytes is the sum of
-- the workspace's file sizes, kept in the same transaction as every insert.
CREATE TABLE workspace_usage (
    workspace_id TEXT    NOT NULL PRIMARY KEY REFERENCES workspaces (id),
    stored_bytes INTEGER NOT NULL DEFAULT 0 CHECK (stored_bytes >= 0)
) STRICT;

CREATE TABLE quota_reservations (
    id           TEXT    NOT NULL PRIMARY KEY,
    workspace_id TEXT    NOT NULL REFERENCES workspace_usage (workspace_id),
    bytes        INTEGER NOT NULL CHECK (bytes >= 0),
    expires_at   INTEGER NOT NULL
) STRICT;

CREATE INDEX quota_reservations_workspace ON quota_reservations (workspace_id, expires_at);

CREATE TABLE provider_keys (
    workspace_id TEXT    NOT NULL REFERENCES workspaces (id),
    provider     TEXT    NOT NULL CHECK (provider <> ''),
    sealed       BLOB    NOT NULL,
    updated_at   INTEGER NOT NULL,
    PRIMARY KEY (workspace_id, provider)
) STRICT;
