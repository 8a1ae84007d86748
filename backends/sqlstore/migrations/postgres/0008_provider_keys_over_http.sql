-- Provider keys managed over HTTP: several per workspace and provider, each
-- with the fields of the BYOK resource. The one key per (workspace,
-- provider) stored by `gateway byok set` moves over as source 'cli', which
-- that command keeps replacing. The seal's associated data stays
-- (workspace, provider), so sealed keys move as they are.
CREATE TABLE byok_keys (
    id                     UUID        NOT NULL,
    user_id                TEXT        NOT NULL,
    workspace_id           UUID        NOT NULL,
    provider               TEXT        NOT NULL,
    name                   TEXT,
    label                  TEXT        NOT NULL,
    sealed                 BYTEA       NOT NULL,
    disabled               BOOLEAN     NOT NULL DEFAULT FALSE,
    allowed_api_key_hashes TEXT,
    allowed_models         TEXT,
    is_byok_only           BOOLEAN     NOT NULL DEFAULT FALSE,
    is_fallback            BOOLEAN     NOT NULL DEFAULT FALSE,
    is_required            BOOLEAN     NOT NULL DEFAULT FALSE,
    declared_zdr           BOOLEAN,
    sort_order             INTEGER     NOT NULL DEFAULT 0,
    source                 TEXT        NOT NULL DEFAULT 'api',
    created_at             TIMESTAMPTZ NOT NULL,
    updated_at             TIMESTAMPTZ,
    CONSTRAINT byok_keys_pkey PRIMARY KEY (id),
    CONSTRAINT byok_keys_user_id_fkey FOREIGN KEY (user_id) REFERENCES users (id),
    CONSTRAINT byok_keys_workspace_id_fkey FOREIGN KEY (workspace_id) REFERENCES workspaces (id),
    CONSTRAINT byok_keys_provider_check CHECK (provider IN ('openai', 'anthropic')),
    CONSTRAINT byok_keys_source_check CHECK (source IN ('api', 'cli'))
);

CREATE INDEX byok_keys_user_created ON byok_keys (user_id, created_at, id);
CREATE INDEX byok_keys_workspace_provider ON byok_keys (workspace_id, provider, sort_order, created_at);

INSERT INTO byok_keys (id, user_id, workspace_id, provider, name, label, sealed, source, created_at, updated_at)
SELECT gen_random_uuid(), w.created_by, p.workspace_id, p.provider, 'set with the CLI', 'stored with the CLI',
       p.sealed, 'cli', p.updated_at, NULL
FROM provider_keys p JOIN workspaces w ON w.id = p.workspace_id
WHERE p.provider IN ('openai', 'anthropic');

DROP TABLE provider_keys;
