-- Keys managed over HTTP: what the Key resource shows beyond the
-- authentication columns, and a log of changes that the server polls to
-- drop revoked keys from its authentication cache (a CLI process may change
-- a key of the same file).
ALTER TABLE api_keys ADD COLUMN label TEXT NOT NULL DEFAULT '';
ALTER TABLE api_keys ADD COLUMN expires_at INTEGER;
ALTER TABLE api_keys ADD COLUMN updated_at INTEGER;
ALTER TABLE api_keys ADD COLUMN creator_user_id TEXT;
-- The spend limit in USD as a decimal string, exact to 6 decimals; NULL: none.
ALTER TABLE api_keys ADD COLUMN limit_usd TEXT;
ALTER TABLE api_keys ADD COLUMN limit_reset TEXT
    CHECK (limit_reset IS NULL OR limit_reset IN ('daily', 'weekly', 'monthly'));
ALTER TABLE api_keys ADD COLUMN include_byok_in_limit INTEGER NOT NULL DEFAULT 0;

UPDATE api_keys SET label = 'sk-gw-' || substr(id, 1, 4) || '...', creator_user_id = user_id;

CREATE INDEX api_keys_user_created ON api_keys (user_id, created_at, id);

CREATE TABLE key_changes (
    seq        INTEGER NOT NULL PRIMARY KEY AUTOINCREMENT,
    key_id     TEXT    NOT NULL,
    changed_at INTEGER NOT NULL
) STRICT;

CREATE INDEX key_changes_changed_at ON key_changes (changed_at);
