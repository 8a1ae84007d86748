-- Version 4 is the read side of files.
--
-- Listing pages through a workspace's files by keyset on (created_at, id),
-- newest first or oldest first: this index answers both directions with a
-- range scan, whatever the workspace holds. It starts with workspace_id, so
-- the single-column index it replaces is redundant.
CREATE INDEX files_workspace_created ON files (workspace_id, created_at DESC, id DESC);
DROP INDEX files_workspace_id;

-- Service keys: the other gateway components read files with them.
ALTER TABLE api_keys DROP CONSTRAINT api_keys_role_check;
ALTER TABLE api_keys ADD CONSTRAINT api_keys_role_check CHECK (role IN ('management', 'standard', 'service'));
