-- The runs table's view (0030) on browser runs only.
CREATE MATERIALIZED VIEW IF NOT EXISTS runs_mv TO runs AS
SELECT
    time, site, run_id, continent, country, subdivision, asn, browser, ect,
    param_parallel, param_bytes, param_warmup, beacon_major, exclusions,
    toUInt16(countIf(want = 'h3')) AS h3n,
    toUInt16(countIf(want = 'h3' AND outcome = 'h3' AND error = '')) AS h3ok,
    toUInt16(countIf(cold = 1 AND want = 'h2')) AS cold_h2,
    toUInt16(countIf(cold = 1 AND want = 'h3')) AS cold_h3
FROM samples
WHERE phase = 'parallel' AND source = 'browser'
-- Every column but the counts is the same for all samples of a run (its
-- receive time, enrichment, design and exclusions): grouped by, not
-- aggregated, so that no alias repeats a column name.
GROUP BY time, site, run_id, continent, country, subdivision, asn, browser, ect,
         param_parallel, param_bytes, param_warmup, beacon_major, exclusions
