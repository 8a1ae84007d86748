-- Provider keys managed over HTTP: several per workspace and provider, each
-- with the fields of the BYOK resource. The one key per (workspace,
-- provider) stored by `gateway byok set` moves over as source 'cli', which
-- that command keeps replacing. The seal's associated data stays
-- (workspace, provider), so sealed keys move as they are.
CREATE TABLE byok_keys (
    id                     TEXT    NOT NULL PRIMARY KEY,
    user_id                TEXT    NOT NULL REFERENCES users (id),
    workspace_id           TEXT    NOT NULL REFERENCES workspaces (id),
    provider               TEXT    NOT NULL CHECK (provider IN ('openai', 'anthropic')),
    name                   TEXT,
    label                  TEXT    NOT NULL,
    sealed                 BLOB    NOT NULL,
    disabled               INTEGER NOT NULL DEFAULT 0,
    allowed_api_key_hashes TEXT,
    allowed_models         TEXT,
    is_byok_only           INTEGER NOT NULL DEFAULT 0,
    is_fallback            INTEGER NOT NULL DEFAULT 0,
    is_required            INTEGER NOT NULL DEFAULT 0,
    declared_zdr           INTEGER,
    sort_order             INTEGER NOT NULL DEFAULT 0,
    source                 TEXT    NOT NULL DEFAULT 'api' CHECK (source IN ('api', 'cli')),
    created_at             INTEGER NOT NULL,
    updated_at             INTEGER
) STRICT;

CREATE INDEX byok_keys_user_created ON byok_keys (user_id, created_at, id);
CREATE INDEX byok_keys_workspace_provider ON byok_keys (workspace_id, provider, sort_order, created_at);

-- A version-4 UUID from random bytes, in canonical form.
INSERT INTO byok_keys (id, user_id, workspace_id, provider, name, label, sealed, source, created_at, updated_at)
SELECT lower(hex(randomblob(4)) || '-' || hex(randomblob(2)) || '-4' || substr(hex(randomblob(2)), 2) || '-' ||
             substr('89ab', 1 + (abs(random()) % 4), 1) || substr(hex(randomblob(2)), 2) || '-' || hex(randomblob(6))),
       w.created_by, p.workspace_id, p.provider, 'set with the CLI', 'stored with the CLI', p.sealed, 'cli',
       p.updated_at, NULL
FROM provider_keys p JOIN workspaces w ON w.id = p.workspace_id
WHERE p.provider IN ('openai', 'anthropic');

DROP TABLE provider_keys;
