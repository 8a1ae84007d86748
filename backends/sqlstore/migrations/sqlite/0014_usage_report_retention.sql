-- Raw usage reports are deleted 36 days after they arrived (spend.RawRetention).
-- SQLite finds the oldest by rowid, in insertion order: no index is needed,
-- so nothing changes here; the version keeps the two dialects in step.
SELECT 1;
