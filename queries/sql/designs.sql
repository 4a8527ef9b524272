-- The test designs of the window's runs, most runs first (the report shows
-- one at a time: the first by default). From the runs table, one row per
-- run with parallel requests (store migration 0039), as the rollup holds
-- them: exact counts over the exact window, in under half the time
-- uniqHLL12Merge over the rollup's hours took (20 against 45 ms at 10 M
-- samples). /*PLACE*/ is the report's place (continent, country), if any.
-- Parameters: since, until (unix seconds), site twice.
SELECT param_parallel, param_bytes, param_warmup, beacon_major, param_extra, count() AS n_runs
FROM runs
WHERE time >= toDateTime(@since, 'UTC') AND time < toDateTime(@until, 'UTC')
  AND (@site = '' OR site = @site)
  AND {{template "place" .}}
GROUP BY param_parallel, param_bytes, param_warmup, beacon_major, param_extra
ORDER BY n_runs DESC, param_parallel, param_bytes, param_warmup, beacon_major, param_extra
