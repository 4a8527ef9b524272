-- The runs table again from every row stored so far, now with the runs'
-- samples (0039); run again after an interruption it starts over.
-- Migrations run before ingest starts, so no row arrives between this and
-- the view (0042).
TRUNCATE TABLE runs;
{{template "0041 runs from samples" .}}

{{define "0041 runs from samples" -}}
INSERT INTO {{.Name "runs"}} (time, site, run_id, continent, country, subdivision, asn, browser, ect,
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
FROM {{.Name "samples"}}
WHERE phase = 'parallel' AND source = 'browser'
-- Every column but the counts and arrays is the same for all samples of a
-- run (its receive time, enrichment, design, batch order, bot flag and
-- exclusions): grouped by, not aggregated, so that no alias repeats a
-- column name.
GROUP BY time, site, run_id, continent, country, subdivision, asn, browser, ect,
         param_parallel, param_bytes, param_warmup, beacon_major, param_order, bot, exclusions
{{- end}}
