-- Which of the given runs samples already holds, so that a replayed or
-- retried insert leaves them out and every run is stored once. A run is
-- inserted in one block, so it is either wholly there or not at all. The
-- site and the time range prune by the sort key's prefix. The run ids are
-- made a set (IN a subquery) that each row is looked up in: has() on the
-- array compared every row in the range with every id, seconds for a
-- batch replayed into an hour of stored runs.
-- Parameters: sites (Array(String)), first and last receive time (unix
-- seconds), run ids in canonical UUID form (Array(String)).
SELECT DISTINCT toString(run_id)
FROM samples
WHERE has(?, site)
  AND time >= toDateTime(?, 'UTC') AND time <= toDateTime(?, 'UTC')
  AND toString(run_id) IN (SELECT arrayJoin(?))
