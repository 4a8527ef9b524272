-- Feeds runs from every block inserted into samples: browser runs only.
-- The arrays come from one aggregation, so their elements line up.
CREATE MATERIALIZED VIEW IF NOT EXISTS {{.Name "runs_mv"}}{{.OnCluster}} TO {{.Local "runs"}} AS
{{template "runs from" (.Reading (.Local "samples"))}}

{{- define "runs from"}}
SELECT
    time, site, run_id, continent, country, subdivision, asn, browser, ect,
    {{template "design" .}}, param_order, bot, exclusions,
    toUInt16(countIf(want = 'h3')) AS h3n,
    toUInt16(countIf(want = 'h3' AND outcome = 'h3' AND error = '')) AS h3ok,
    toUInt16(countIf(cold = 1 AND want = 'h2')) AS cold_h2,
    toUInt16(countIf(cold = 1 AND want = 'h3')) AS cold_h3,
    groupArray(duration_ms) AS durations,
    groupArray(outcome) AS outcomes,
    groupArray(want) AS wants,
    groupArray(error) AS errors,
    arrayFilter((w, e) -> e != '', groupArray(want), groupArray(error)) AS failed_wants,
    arrayFilter(e -> e != '', groupArray(error)) AS failed_errors
FROM {{.From}}
WHERE phase = 'parallel' AND source = 'browser'
-- Every column but the counts and arrays is the same for all samples of a
-- run (its receive time, enrichment, design, batch order, bot flag and
-- exclusions): grouped by, not aggregated, so that no alias repeats a
-- column name.
GROUP BY time, site, run_id, continent, country, subdivision, asn, browser, ect,
         {{template "design" .}}, param_order, bot, exclusions
{{- end}}
