-- Where a deleted file stood in its workspace's listing, kept for a day:
-- a client paging with after / after_id / before_id may anchor on a file
-- deleted between its pages, and the page still starts at its position.
CREATE TABLE deleted_files (
    workspace_id TEXT    NOT NULL,
    id           TEXT    NOT NULL,
    created_at   INTEGER NOT NULL,
    deleted_at   INTEGER NOT NULL,
    PRIMARY KEY (workspace_id, id)
) STRICT;

CREATE INDEX deleted_files_deleted_at ON deleted_files (deleted_at);
