-- Placeholder: version 4 belongs to the file listing work (issue 10), merged
-- separately. It holds the number so that 0005 loads here (versions may not
-- have gaps). Delete this file when that branch's 0004 arrives; the two
-- together fail TestMigrationsMatch and every Open, so it cannot be missed.
SELECT 1;
