CREATE MATERIALIZED VIEW IF NOT EXISTS /*DATABASE*/.samples_rollup_mv ON CLUSTER /*CLUSTER*/ TO /*DATABASE*/.samples_rollup_local AS
SELECT
    toStartOfHour(time) AS hour,
    site, continent, country, param_parallel, param_bytes, param_warmup, beacon_major, param_order, outcome, exclusions,
    countState() AS samples,
    uniqHLL12State(run_id) AS runs,
    quantilesTDigestState(0.5, 0.75, 0.9, 0.95, 0.99)(duration_ms) AS duration
FROM /*DATABASE*/.samples_local
WHERE phase = 'parallel' AND error = ''
GROUP BY hour, site, continent, country, param_parallel, param_bytes, param_warmup, beacon_major, param_order, outcome, exclusions
