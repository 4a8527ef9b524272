-- Feeds itt_rollup from every block inserted into samples, as
-- samples_rollup_mv feeds samples_rollup: browser rows only, a failed
-- request counted at the script's timeout (beacon.RequestTimeoutMS). A
-- sample's bot column is its run's exclusion bit of a bot (store.ExcludeBot
-- is set exactly when it is), which the copy of earlier hours reads from
-- samples_rollup's exclusions.
CREATE MATERIALIZED VIEW IF NOT EXISTS {{.Name (printf "%s_mv" (.Rollup "itt_rollup"))}}{{.OnCluster}} TO {{.Local (.Rollup "itt_rollup")}} AS
{{template "itt rollup from" (.Reading (.Local "samples"))}}

{{- define "itt rollup from"}}
SELECT
    {{.Slot "time"}} AS hour,
    site, continent, country, {{template "design" .}}, want, toUInt8(error != '') AS failed, bot,
    countState() AS samples,
    quantilesTDigestState(0.5, 0.75, 0.9, 0.95, 0.99)(if(error = '', duration_ms, toFloat32({{.RequestTimeoutMS}}))) AS duration
FROM {{.From}}
WHERE phase = 'parallel' AND source = 'browser'
GROUP BY hour, site, continent, country, {{template "design" .}}, want, failed, bot
{{- end}}
