-- The test designs of the window's agent runs, most runs first, from raw
-- rows (the rollup and the runs table hold browser runs only).
SELECT param_parallel, param_bytes, param_warmup, beacon_major, param_extra, toUInt64(uniq(run_id)) AS n_runs
FROM samples
WHERE time >= toDateTime(@since, 'UTC') AND time < toDateTime(@until, 'UTC')
  AND (@site = '' OR site = @site)
  AND {{template "place" .}}
  AND source = 'agent' AND phase = 'parallel'
GROUP BY param_parallel, param_bytes, param_warmup, beacon_major, param_extra
ORDER BY n_runs DESC, param_parallel, param_bytes, param_warmup, beacon_major, param_extra
