-- Resumable uploads and their parts.
--
-- IF NOT EXISTS: nothing here depends on the usage tables, so a database
-- whose record of versions was rewound below this one (as the usage
-- upgrade test rewinds it to before version 12) applies it again without
-- losing or refusing anything.
--
-- backend is the provider an upload was forwarded to (its id is then the
-- provider's upload id, and the provider holds its parts), '' for an
-- upload whose parts the gateway stores.
--
-- workspace_id has no foreign key: a workspace may be deleted while rows of
-- its finished uploads remain (a pending one holds an unexpired quota
-- reservation, which refuses the deletion). parts_count and parts_bytes are
-- the sums of the upload's parts, kept by each part's insert under the
-- upload row's lock, so adding a part never sums thousands of rows.
CREATE TABLE IF NOT EXISTS uploads (
    id             TEXT        NOT NULL,
    workspace_id   UUID        NOT NULL,
    key_id         TEXT        NOT NULL,
    filename       TEXT        NOT NULL,
    mime_type      TEXT        NOT NULL,
    purpose        TEXT        NOT NULL,
    bytes          BIGINT      NOT NULL,
    status         TEXT        NOT NULL,
    created_at     TIMESTAMPTZ NOT NULL,
    expires_at     TIMESTAMPTZ NOT NULL,
    reservation_id TEXT        NOT NULL,
    file_id        TEXT,
    parts_count    INTEGER     NOT NULL DEFAULT 0,
    parts_bytes    BIGINT      NOT NULL DEFAULT 0,
    backend        TEXT        NOT NULL DEFAULT '',
    CONSTRAINT uploads_pkey PRIMARY KEY (id),
    CONSTRAINT uploads_bytes_check CHECK (bytes >= 0),
    CONSTRAINT uploads_status_check CHECK (status IN ('pending', 'completed', 'cancelled', 'expired')),
    CONSTRAINT uploads_parts_check CHECK (parts_count >= 0 AND parts_bytes >= 0 AND parts_bytes <= bytes)
);

-- A workspace's pending uploads, counted against its limit at each
-- creation, and those past their time, for the sweeper to expire.
CREATE INDEX IF NOT EXISTS uploads_pending_workspace ON uploads (workspace_id, expires_at) WHERE status = 'pending';
CREATE INDEX IF NOT EXISTS uploads_pending_expires_at ON uploads (expires_at) WHERE status = 'pending';
-- Settled uploads by age, for the sweeper to delete their rows in time.
CREATE INDEX IF NOT EXISTS uploads_settled_expires_at ON uploads (expires_at) WHERE status <> 'pending';

-- text is what joining the part to its neighbours as text needs (the
-- runes cut at its edges, sniff.PieceSummary), NULL when its bytes cannot
-- be text: completing a text file reads no part back.
-- seq is the part's place in the order parts were stored. settled_at is set
-- when the upload stops being pending: from then on the part's object may
-- be deleted, and the partial index lists exactly those parts, however
-- many uploads have come and gone.
CREATE TABLE IF NOT EXISTS upload_parts (
    id         TEXT        NOT NULL,
    upload_id  TEXT        NOT NULL,
    seq        INTEGER     NOT NULL,
    bytes      BIGINT      NOT NULL,
    object_key TEXT        NOT NULL,
    created_at TIMESTAMPTZ NOT NULL,
    settled_at TIMESTAMPTZ,
    text       TEXT,
    CONSTRAINT upload_parts_pkey PRIMARY KEY (id),
    CONSTRAINT upload_parts_upload_id_fkey FOREIGN KEY (upload_id) REFERENCES uploads (id),
    CONSTRAINT upload_parts_upload_id_seq_key UNIQUE (upload_id, seq),
    CONSTRAINT upload_parts_bytes_check CHECK (bytes >= 0)
);

CREATE INDEX IF NOT EXISTS upload_parts_settled ON upload_parts (settled_at) WHERE settled_at IS NOT NULL;
CREATE INDEX IF NOT EXISTS upload_parts_object_key ON upload_parts (object_key);
