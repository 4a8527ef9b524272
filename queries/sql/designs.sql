-- The test designs of the window's runs in the report's place, most runs
-- first (the report shows one at a time: the first by default). From the
-- runs table, one row per browser run with parallel requests (store
-- migration 0039): exact counts over the exact window, and cheaper than
-- merging the rollup's HyperLogLog states.
SELECT param_parallel, param_bytes, param_warmup, beacon_major, param_extra, count() AS n_runs
FROM runs
WHERE time >= toDateTime(@since, 'UTC') AND time < toDateTime(@until, 'UTC')
  AND (@site = '' OR site = @site)
  AND {{template "place" .}}
GROUP BY param_parallel, param_bytes, param_warmup, beacon_major, param_extra
ORDER BY n_runs DESC, param_parallel, param_bytes, param_warmup, beacon_major, param_extra
