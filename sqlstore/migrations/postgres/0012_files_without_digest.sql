-- A file's SHA-256 served only as its ETag; the file id serves as well
-- (a file's bytes never change under its id) and costs nothing per byte
-- uploaded. Replicas of the previous release still write the column during
-- a rolling upgrade, so it stays, defaulted for the replicas that no longer
-- do; a later release drops it.
ALTER TABLE files ALTER COLUMN sha256 SET DEFAULT '';
