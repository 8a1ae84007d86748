-- Version 4 is the read side of files.
--
-- Listing pages through a workspace's files by keyset on (created_at, id),
-- newest first or oldest first: this index answers both directions with a
-- range scan, whatever the workspace holds. It starts with workspace_id, so
-- the single-column index it replaces is redundant.
CREATE INDEX files_workspace_created ON files (workspace_id, created_at DESC, id DESC);
DROP INDEX files_workspace_id;

-- Service keys: the other gateway components read files with them. SQLite
-- cannot change a CHECK constraint in place, so the table is rebuilt (no
-- other table references api_keys).
CREATE TABLE api_keys_v4 (
    id           TEXT    NOT NULL PRIMARY KEY,
    user_id      TEXT    NOT NULL REFERENCES users (id),
    name         TEXT    NOT NULL,
    role         TEXT    NOT NULL CHECK (role IN ('management', 'standard', 'service')),
    workspace_id TEXT REFERENCES workspaces (id),
    models       TEXT,
    hash         BLOB    NOT NULL CHECK (length(hash) = 32),
    disabled     INTEGER NOT NULL DEFAULT 0,
    created_at   INTEGER NOT NULL
) STRICT;
INSERT INTO api_keys_v4 (id, user_id, name, role, workspace_id, models, hash, disabled, created_at)
    SELECT id, user_id, name, role, workspace_id, models, hash, disabled, created_at FROM api_keys;
DROP TABLE api_keys;
ALTER TABLE api_keys_v4 RENAME TO api_keys;
CREATE INDEX api_keys_user_id ON api_keys (user_id);
CREATE INDEX api_keys_workspace_id ON api_keys (workspace_id);
