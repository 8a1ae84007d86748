-- The audit log: one row per management action (audit.Entry), written in
-- the transaction of the change it records. Rows are never updated; they
-- are deleted once older than the configured retention (by at, Unix
-- microseconds).
--
-- user_id is the user the entry is shown to: the acting key's user, or for
-- the CLI and the system the owner of what was changed. There is no foreign
-- key: an entry outlives the key, workspace and user it names.
--
-- id is a UUIDv7 in text, the tie-break of the keyset order (at DESC, id
-- DESC).
CREATE TABLE audit_log (
    id          TEXT    NOT NULL PRIMARY KEY,
    at          INTEGER NOT NULL,
    user_id     TEXT    NOT NULL,
    key_hash    TEXT    NOT NULL,
    via         TEXT    NOT NULL,
    client_addr TEXT    NOT NULL,
    request_id  TEXT    NOT NULL,
    action      TEXT    NOT NULL,
    target      TEXT    NOT NULL,
    changes     TEXT    NOT NULL
) STRICT;

-- GET /audit lists one user's entries newest first, continuing after a
-- cursor (at, id); each optional exact filter has an index that keeps the
-- page a range scan. since bounds the same ranges from below.
CREATE INDEX audit_log_user ON audit_log (user_id, at DESC, id DESC);
CREATE INDEX audit_log_user_target ON audit_log (user_id, target, at DESC, id DESC);
CREATE INDEX audit_log_user_actor ON audit_log (user_id, key_hash, at DESC, id DESC);
CREATE INDEX audit_log_user_action ON audit_log (user_id, action, at DESC, id DESC);
-- Retention deletes the oldest first.
CREATE INDEX audit_log_at ON audit_log (at);
