-- The purpose an upload named (OpenAI's Files API values; the service
-- validates them), echoed in the OpenAI shape of the file. Files stored
-- before it existed were uploaded without one: user_data, the default.
ALTER TABLE files ADD COLUMN purpose TEXT NOT NULL DEFAULT 'user_data';
