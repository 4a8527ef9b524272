-- Feeds failure_counts from every block inserted into samples: a browser
-- run's failed parallel requests, as the runs table holds them apart
-- (failed_wants, failed_errors).
CREATE MATERIALIZED VIEW IF NOT EXISTS {{.Name (printf "%s_mv" (.Rollup "failure_counts"))}}{{.OnCluster}} TO {{.Local (.Rollup "failure_counts")}} AS
{{template "failure counts from" (.Reading (.Local "samples"))}}

{{- define "failure counts from"}}
SELECT
    {{.Slot "time"}} AS hour,
    site, continent, country, {{template "design" .}}, bot, want, error,
    count() AS failures
FROM {{.From}}
WHERE error != '' AND phase = 'parallel' AND source = 'browser'
GROUP BY hour, site, continent, country, {{template "design" .}}, bot, want, error
{{- end}}
