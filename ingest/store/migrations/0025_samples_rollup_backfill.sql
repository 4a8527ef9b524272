-- The rollup of every row stored so far; run again after an interruption
-- it starts over. Migrations run before ingest starts, so no row arrives
-- between this and the view (0026).
TRUNCATE TABLE samples_rollup;
INSERT INTO samples_rollup
SELECT
    toStartOfHour(time) AS hour,
    site, continent, country, param_parallel, param_bytes, param_warmup, beacon_major, param_order, outcome, want, toUInt8(error != '') AS failed, exclusions,
    countState() AS samples,
    uniqHLL12State(run_id) AS runs,
    quantilesTDigestState(0.5, 0.75, 0.9, 0.95, 0.99)(if(error = '', duration_ms, toFloat32(10000))) AS duration
FROM samples
WHERE phase = 'parallel'
GROUP BY hour, site, continent, country, param_parallel, param_bytes, param_warmup, beacon_major, param_order, outcome, want, failed, exclusions
