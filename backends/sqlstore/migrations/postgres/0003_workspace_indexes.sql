-- Workspaces can be listed and deleted.

-- Listing pages through a user's workspaces in this order.
CREATE INDEX workspaces_created_by_created_at ON workspaces (created_by, created_at, id);

-- A delete counts the keys bound to the workspace.
CREATE INDEX api_keys_workspace_id ON api_keys (workspace_id);
