-- Keys managed over HTTP: what the Key resource shows beyond the
-- authentication columns, and a log of changes that every replica polls to
-- drop revoked keys from its authentication cache.
ALTER TABLE api_keys ADD COLUMN label TEXT NOT NULL DEFAULT '';
ALTER TABLE api_keys ADD COLUMN expires_at TIMESTAMPTZ;
ALTER TABLE api_keys ADD COLUMN updated_at TIMESTAMPTZ;
ALTER TABLE api_keys ADD COLUMN creator_user_id TEXT;
-- The spend limit in USD, exact to the report's 6 decimals; NULL: none.
ALTER TABLE api_keys ADD COLUMN limit_usd NUMERIC(20, 6);
ALTER TABLE api_keys ADD COLUMN limit_reset TEXT;
ALTER TABLE api_keys ADD COLUMN include_byok_in_limit BOOLEAN NOT NULL DEFAULT FALSE;
ALTER TABLE api_keys ADD CONSTRAINT api_keys_limit_reset_check
    CHECK (limit_reset IS NULL OR limit_reset IN ('daily', 'weekly', 'monthly'));
ALTER TABLE api_keys ADD CONSTRAINT api_keys_limit_usd_check CHECK (limit_usd IS NULL OR limit_usd >= 0);

-- Keys made before labels existed show their public id's first characters;
-- their secret's last four were never stored.
UPDATE api_keys SET label = 'sk-gw-' || substr(id, 1, 4) || '...', creator_user_id = user_id;

CREATE INDEX api_keys_user_created ON api_keys (user_id, created_at, id);

-- One row per change that can revoke a cached authentication (disable,
-- delete, expiry moved, role-relevant fields). Rows are kept for a while and
-- pruned; a replica reads those newer than its last poll minus a margin, so
-- a change committed late is still seen.
CREATE TABLE key_changes (
    seq        BIGSERIAL   NOT NULL,
    key_id     TEXT        NOT NULL,
    changed_at TIMESTAMPTZ NOT NULL,
    CONSTRAINT key_changes_pkey PRIMARY KEY (seq)
);

CREATE INDEX key_changes_changed_at ON key_changes (changed_at);
