-- Which of the given NEL upload batches nel_reports already holds, so that a
-- replayed or retried insert leaves them out. A batch is inserted in one
-- block, so it is either wholly there or not at all. The ids are made a set
-- (IN a subquery), as in existing_runs.sql.
-- Parameters: first and last receive time (unix seconds), batch ids in
-- canonical UUID form (Array(String)).
SELECT DISTINCT toString(batch_id)
FROM nel_reports
WHERE received >= toDateTime(?, 'UTC') AND received <= toDateTime(?, 'UTC')
  AND toString(batch_id) IN (SELECT arrayJoin(?))
