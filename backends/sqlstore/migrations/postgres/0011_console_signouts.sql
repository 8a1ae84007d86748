-- Console sessions signed out before they expire. A session is a sealed
-- cookie, valid on every replica until its expiry; signing out records
-- its id here so that no replica accepts a copy of the cookie any more.
-- Rows are dropped once their session would have expired anyway.
CREATE TABLE console_signouts (
    session_id TEXT        NOT NULL PRIMARY KEY,
    expires_at TIMESTAMPTZ NOT NULL
);

CREATE INDEX console_signouts_expires_at ON console_signouts (expires_at);
