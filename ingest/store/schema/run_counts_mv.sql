-- Feeds run_counts from every block inserted into samples: a browser run's
-- flags (store.RunFlags) are on one of its parallel samples, so counting
-- those samples counts runs, exactly, without the distinct run ids of
-- every sample. (A view on the runs table would be simpler, but 18.16
-- runs no view on a table that a view writes to, nor a view whose query
-- reads a subquery.)
CREATE MATERIALIZED VIEW IF NOT EXISTS {{.Name (printf "%s_mv" (.Rollup "run_counts"))}}{{.OnCluster}} TO {{.Local (.Rollup "run_counts")}} AS
{{template "run counts from" (.Reading (.Local "samples"))}}

{{- define "run counts from"}}
SELECT
    {{.Slot "time"}} AS hour,
    site, continent, country, {{template "design" .}}, param_order, bot, exclusions,
    count() AS runs,
    countIf(bitAnd(run_flags, {{.RunFlag "h2"}}) != 0) AS runs_h2,
    countIf(bitAnd(run_flags, {{.RunFlag "h3"}}) != 0) AS runs_h3,
    countIf(bitAnd(run_flags, {{.RunFlag "wanted_h3_got_h2"}}) != 0) AS runs_wanted_h3_got_h2,
    countIf(bitAnd(run_flags, {{.RunFlag "other"}}) != 0) AS runs_other,
    countIf(bitAnd(run_flags, {{.RunFlag "cold_h2"}}) != 0) AS runs_cold_h2,
    countIf(bitAnd(run_flags, {{.RunFlag "cold_h3"}}) != 0) AS runs_cold_h3,
    countIf(bitAnd(run_flags, {{.RunFlag "to_h2"}}) != 0) AS runs_to_h2,
    countIf(bitAnd(run_flags, {{.RunFlag "to_h3"}}) != 0) AS runs_to_h3,
    countIf(bitAnd(run_flags, {{.RunFlag "failed_h2"}}) != 0) AS runs_failed_h2,
    countIf(bitAnd(run_flags, {{.RunFlag "failed_h3"}}) != 0) AS runs_failed_h3,
    countIf(bitAnd(run_flags, {{.RunFlag "h3_short"}}) != 0) AS runs_h3_short
FROM {{.From}}
WHERE bitAnd(run_flags, {{.RunFlag "counted"}}) != 0 AND phase = 'parallel' AND source = 'browser'
GROUP BY hour, site, continent, country, {{template "design" .}}, param_order, bot, exclusions
{{- end}}
