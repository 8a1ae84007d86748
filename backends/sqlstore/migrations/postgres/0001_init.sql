-- The metadata schema on PostgreSQL. Constraints are named explicitly: the
-- store tells a primary-key collision from a slug collision by the
-- constraint's name (never by message text), so the names are part of the
-- contract with the Go code. String lists are JSON text; NULL and '[]' mean
-- different things.

CREATE TABLE users (
    id         TEXT        NOT NULL,
    created_at TIMESTAMPTZ NOT NULL,
    CONSTRAINT users_pkey PRIMARY KEY (id)
);

CREATE TABLE workspaces (
    id                                  UUID             NOT NULL,
    name                                TEXT             NOT NULL,
    slug                                TEXT             NOT NULL,
    description                         TEXT             NOT NULL,
    default_text_model                  TEXT,
    default_image_model                 TEXT,
    default_provider_sort               TEXT,
    default_guardrail_id                TEXT             NOT NULL,
    created_by                          TEXT             NOT NULL,
    created_at                          TIMESTAMPTZ      NOT NULL,
    updated_at                          TIMESTAMPTZ,
    include_byok_in_budgets             BOOLEAN          NOT NULL,
    io_logging_api_key_ids              TEXT,
    io_logging_sampling_rate            DOUBLE PRECISION NOT NULL,
    is_data_discount_logging_enabled    BOOLEAN          NOT NULL,
    is_observability_broadcast_enabled  BOOLEAN          NOT NULL,
    is_observability_io_logging_enabled BOOLEAN          NOT NULL,
    CONSTRAINT workspaces_pkey PRIMARY KEY (id),
    CONSTRAINT workspaces_created_by_fkey FOREIGN KEY (created_by) REFERENCES users (id),
    -- The slug race is decided here, by the insert.
    CONSTRAINT workspaces_created_by_slug_key UNIQUE (created_by, slug)
);

CREATE TABLE api_keys (
    id           TEXT        NOT NULL,
    user_id      TEXT        NOT NULL,
    name         TEXT        NOT NULL,
    role         TEXT        NOT NULL,
    workspace_id UUID,
    models       TEXT,
    hash         BYTEA       NOT NULL,
    disabled     BOOLEAN     NOT NULL DEFAULT FALSE,
    created_at   TIMESTAMPTZ NOT NULL,
    CONSTRAINT api_keys_pkey PRIMARY KEY (id),
    CONSTRAINT api_keys_user_id_fkey FOREIGN KEY (user_id) REFERENCES users (id),
    CONSTRAINT api_keys_workspace_id_fkey FOREIGN KEY (workspace_id) REFERENCES workspaces (id),
    CONSTRAINT api_keys_role_check CHECK (role IN ('management', 'standard')),
    CONSTRAINT api_keys_hash_check CHECK (length(hash) = 32)
);

CREATE INDEX api_keys_user_id ON api_keys (user_id);

CREATE TABLE idempotency (
    user_id      TEXT        NOT NULL,
    idem_key     TEXT        NOT NULL,
    request_hash TEXT        NOT NULL,
    status       INTEGER     NOT NULL,
    body         BYTEA       NOT NULL,
    created_at   TIMESTAMPTZ NOT NULL,
    CONSTRAINT idempotency_pkey PRIMARY KEY (user_id, idem_key),
    CONSTRAINT idempotency_user_id_fkey FOREIGN KEY (user_id) REFERENCES users (id)
);

CREATE TABLE files (
    id           TEXT        NOT NULL,
    workspace_id UUID        NOT NULL,
    key_id       TEXT        NOT NULL,
    filename     TEXT        NOT NULL,
    mime_type    TEXT        NOT NULL,
    size         BIGINT      NOT NULL,
    sha256       TEXT        NOT NULL,
    backend      TEXT        NOT NULL,
    object_key   TEXT        NOT NULL,
    created_at   TIMESTAMPTZ NOT NULL,
    CONSTRAINT files_pkey PRIMARY KEY (id),
    CONSTRAINT files_workspace_id_fkey FOREIGN KEY (workspace_id) REFERENCES workspaces (id),
    CONSTRAINT files_size_check CHECK (size >= 0)
);

CREATE INDEX files_workspace_id ON files (workspace_id);

-- One row per workspace that ever reserved quota; Reserve locks it (SELECT
-- ... FOR UPDATE) so reservations of one workspace are decided one at a time
-- across replicas. stored_bytes is the sum of the workspace's file sizes,
-- kept in the same transaction as every insert.
CREATE TABLE workspace_usage (
    workspace_id UUID   NOT NULL,
    stored_bytes BIGINT NOT NULL DEFAULT 0,
    CONSTRAINT workspace_usage_pkey PRIMARY KEY (workspace_id),
    CONSTRAINT workspace_usage_workspace_id_fkey FOREIGN KEY (workspace_id) REFERENCES workspaces (id),
    CONSTRAINT workspace_usage_stored_bytes_check CHECK (stored_bytes >= 0)
);

CREATE TABLE quota_reservations (
    id           TEXT        NOT NULL,
    workspace_id UUID        NOT NULL,
    bytes        BIGINT      NOT NULL,
    expires_at   TIMESTAMPTZ NOT NULL,
    CONSTRAINT quota_reservations_pkey PRIMARY KEY (id),
    CONSTRAINT quota_reservations_workspace_id_fkey FOREIGN KEY (workspace_id)
        REFERENCES workspace_usage (workspace_id),
    CONSTRAINT quota_reservations_bytes_check CHECK (bytes >= 0)
);

CREATE INDEX quota_reservations_workspace ON quota_reservations (workspace_id, expires_at);

CREATE TABLE provider_keys (
    workspace_id UUID        NOT NULL,
    provider     TEXT        NOT NULL,
    sealed       BYTEA       NOT NULL,
    updated_at   TIMESTAMPTZ NOT NULL,
    CONSTRAINT provider_keys_pkey PRIMARY KEY (workspace_id, provider),
    CONSTRAINT provider_keys_workspace_id_fkey FOREIGN KEY (workspace_id) REFERENCES workspaces (id),
    CONSTRAINT provider_keys_provider_check CHECK (provider <> '')
);
