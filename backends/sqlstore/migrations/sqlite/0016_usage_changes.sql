-- PostgreSQL moves the change marks of the running totals to a table of
-- their own, so that a total is updated in place (see its 0016). SQLite
-- updates rows in place whatever their indexes, so nothing changes here;
-- the version keeps the two dialects in step.
SELECT 1;
