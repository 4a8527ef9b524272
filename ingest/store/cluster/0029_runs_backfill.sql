-- The runs again from every sample stored so far, now with their samples
-- (see migrations/0041). The rows stored before, the ones without samples
-- (a run has at least one parallel sample), are deleted by a mutation:
-- 18.16 forwards TRUNCATE … ON CLUSTER without credentials, which a server
-- with a password refuses, while a mutation goes through ZooKeeper to
-- every replica. It works in the background, so for a few seconds a run
-- may be counted twice; its condition keeps it off the rows inserted next
-- whatever parts merge meanwhile. Run again after an interruption, the
-- copy may hold a run twice until ReplacingMergeTree merges the two. The
-- rows are read and written through the Distributed tables: a run's row
-- goes to the shard of its samples (the same sharding key).
ALTER TABLE /*DATABASE*/.runs_local ON CLUSTER /*CLUSTER*/ DELETE WHERE empty(durations);
INSERT INTO /*DATABASE*/.runs (time, site, run_id, continent, country, subdivision, asn, browser, ect,
                               param_parallel, param_bytes, param_warmup, beacon_major, param_order, bot, exclusions,
                               h3n, h3ok, cold_h2, cold_h3, durations, outcomes, wants, errors)
SELECT
    time, site, run_id, continent, country, subdivision, asn, browser, ect,
    param_parallel, param_bytes, param_warmup, beacon_major, param_order, bot, exclusions,
    toUInt16(countIf(want = 'h3')) AS h3n,
    toUInt16(countIf(want = 'h3' AND outcome = 'h3' AND error = '')) AS h3ok,
    toUInt16(countIf(cold = 1 AND want = 'h2')) AS cold_h2,
    toUInt16(countIf(cold = 1 AND want = 'h3')) AS cold_h3,
    groupArray(duration_ms) AS durations,
    groupArray(outcome) AS outcomes,
    groupArray(want) AS wants,
    groupArray(error) AS errors
FROM /*DATABASE*/.samples
WHERE phase = 'parallel' AND source = 'browser'
GROUP BY time, site, run_id, continent, country, subdivision, asn, browser, ect,
         param_parallel, param_bytes, param_warmup, beacon_major, param_order, bot, exclusions
