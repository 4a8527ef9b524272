-- The test designs of the window's runs, most runs first (the report shows
-- one at a time: the first by default). Hours overlapping the window, from
-- the rollup. Parameters: first hour, end (unix seconds), site twice.
SELECT param_parallel, param_bytes, param_warmup, beacon_major, toUInt64(uniqHLL12Merge(runs)) AS n_runs
FROM samples_rollup
WHERE hour >= toDateTime(?, 'UTC') AND hour < toDateTime(?, 'UTC')
  AND (? = '' OR site = ?)
GROUP BY param_parallel, param_bytes, param_warmup, beacon_major
ORDER BY n_runs DESC, param_parallel, param_bytes, param_warmup, beacon_major
