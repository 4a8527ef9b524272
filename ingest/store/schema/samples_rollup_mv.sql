-- Feeds samples_rollup from every block inserted into samples: browser
-- rows only (agent runs are reported from raw rows, never pooled with
-- visitors'). A failed request is counted at the script's timeout
-- (beacon.RequestTimeoutMS).
CREATE MATERIALIZED VIEW IF NOT EXISTS {{.Name (printf "%s_mv" (.Rollup "samples_rollup"))}}{{.OnCluster}} TO {{.Local (.Rollup "samples_rollup")}} AS
{{template "samples rollup from" (.Reading (.Local "samples"))}}

{{- define "samples rollup from"}}
SELECT
    {{.Slot "time"}} AS hour,
    site, continent, country, {{template "design" .}}, param_order, outcome, want, toUInt8(error != '') AS failed, exclusions,
    countState() AS samples,
    uniqHLL12State(run_id) AS runs,
    quantilesTDigestState(0.5, 0.75, 0.9, 0.95, 0.99)(if(error = '', duration_ms, toFloat32({{.RequestTimeoutMS}}))) AS duration
FROM {{.From}}
WHERE phase = 'parallel' AND source = 'browser'
GROUP BY hour, site, continent, country, {{template "design" .}}, param_order, outcome, want, failed, exclusions
{{- end}}
