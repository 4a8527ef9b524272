-- Feeds run_counts from every block inserted into samples: browser runs'
-- parallel requests. (A view on the runs table would be simpler, but 18.16
-- runs no view on a table that a view writes to, nor a view whose query
-- reads a subquery.)
CREATE MATERIALIZED VIEW IF NOT EXISTS {{.Name "run_counts_mv"}}{{.OnCluster}} TO {{.Local "run_counts"}} AS
SELECT
    toStartOfHour(time) AS hour,
    site, continent, country, param_parallel, param_bytes, param_warmup, beacon_major, param_order, bot, exclusions,
    uniqExact(run_id) AS runs,
    uniqExactIf(run_id, outcome = 'h2') AS runs_h2,
    uniqExactIf(run_id, outcome = 'h3') AS runs_h3,
    uniqExactIf(run_id, outcome = 'wanted_h3_got_h2') AS runs_wanted_h3_got_h2,
    uniqExactIf(run_id, outcome = 'other') AS runs_other,
    uniqExactIf(run_id, cold = 1 AND want = 'h2') AS runs_cold_h2,
    uniqExactIf(run_id, cold = 1 AND want = 'h3') AS runs_cold_h3,
    uniqExactIf(run_id, want = 'h2') AS runs_to_h2,
    uniqExactIf(run_id, want = 'h3') AS runs_to_h3,
    uniqExactIf(run_id, want = 'h2' AND error != '') AS runs_failed_h2,
    uniqExactIf(run_id, want = 'h3' AND error != '') AS runs_failed_h3,
    uniqExactIf(run_id, want = 'h3' AND NOT (outcome = 'h3' AND error = '')) AS runs_h3_short
FROM {{.Local "samples"}}
WHERE phase = 'parallel' AND source = 'browser'
GROUP BY hour, site, continent, country, param_parallel, param_bytes, param_warmup, beacon_major, param_order, bot, exclusions
