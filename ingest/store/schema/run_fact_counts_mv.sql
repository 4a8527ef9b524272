-- Feeds run_fact_counts from every block inserted into samples: a browser
-- run's first-contact flags (store.RunFlags) are on its first sample, so
-- counting those samples counts runs.
CREATE MATERIALIZED VIEW IF NOT EXISTS {{.Name (printf "%s_mv" (.Rollup "run_fact_counts"))}}{{.OnCluster}} TO {{.Local (.Rollup "run_fact_counts")}} AS
{{template "run fact counts from" (.Reading (.Local "samples"))}}

{{- define "run fact counts from"}}
SELECT
    {{.Slot "time"}} AS hour,
    site, continent, country, browser, bot, {{template "design" .}}, beacon_version,
    count() AS runs,
    countIf(bitAnd(run_flags, {{.RunFlag "h3_wanted"}}) != 0) AS runs_h3_wanted,
    countIf(bitAnd(run_flags, {{.RunFlag "first_h3"}}) != 0) AS runs_first_h3,
    countIf(bitAnd(run_flags, {{.RunFlag "upgraded"}}) != 0) AS runs_upgraded,
    countIf(bitAnd(run_flags, {{.RunFlag "never_h3"}}) != 0) AS runs_never_h3,
{{- if .Since 60}}
    countIf(bitAnd(run_flags, {{.RunFlag "first_h3"}}) != 0 AND alt_svc IN (1, 4)) AS runs_first_h3_before,
    countIf(bitAnd(run_flags, {{.RunFlag "first_h3"}}) != 0 AND alt_svc IN (2, 3)) AS runs_first_h3_page,
{{- end}}
    countIf(script_errors_idle + script_errors_warmup + script_errors_batch + script_errors_timing + script_errors_send > 0) AS runs_with_errors,
    sum(toUInt64(script_errors_idle)) AS errors_idle,
    sum(toUInt64(script_errors_warmup)) AS errors_warmup,
    sum(toUInt64(script_errors_batch)) AS errors_batch,
    sum(toUInt64(script_errors_timing)) AS errors_timing,
    sum(toUInt64(script_errors_send)) AS errors_send
FROM {{.From}}
WHERE bitAnd(run_flags, {{.RunFlag "facts"}}) != 0 AND source = 'browser'
GROUP BY hour, site, continent, country, browser, bot, {{template "design" .}}, beacon_version
{{- end}}
