-- PostgreSQL keeps raw usage reports in day partitions it drops whole (see
-- its 0018). SQLite keeps one table whose old rows are deleted in small
-- batches, so nothing changes here; the version keeps the two dialects in
-- step.
SELECT 1;
