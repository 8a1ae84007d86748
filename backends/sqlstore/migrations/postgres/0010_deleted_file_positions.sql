-- Where a deleted file stood in its workspace's listing, kept for a day:
-- a client paging with after / after_id / before_id may anchor on a file
-- deleted between its pages, and the page still starts at its position.
CREATE TABLE deleted_files (
    workspace_id UUID        NOT NULL,
    id           TEXT        NOT NULL,
    created_at   TIMESTAMPTZ NOT NULL,
    deleted_at   TIMESTAMPTZ NOT NULL,
    CONSTRAINT deleted_files_pkey PRIMARY KEY (workspace_id, id)
);

CREATE INDEX deleted_files_deleted_at ON deleted_files (deleted_at);
