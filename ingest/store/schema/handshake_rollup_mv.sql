-- Feeds handshake_rollup from every block inserted into samples.
CREATE MATERIALIZED VIEW IF NOT EXISTS {{.Name (printf "%s_mv" (.Rollup "handshake_rollup"))}}{{.OnCluster}} TO {{.Local (.Rollup "handshake_rollup")}} AS
{{template "handshake rollup from" (.Reading (.Local "samples"))}}

{{- define "handshake rollup from"}}
SELECT
    {{.Slot "time"}} AS hour,
    site, continent, country, {{template "design" .}}, got, srv_retry AS retried,
    countState() AS samples,
    quantilesTDigestState(0.5, 0.75, 0.9, 0.95, 0.99)(duration_ms) AS duration,
    quantilesTDigestState(0.5, 0.75, 0.9, 0.95, 0.99)(connect_ms) AS connect,
    minState(duration_ms) AS fastest,
    sumState(srv_resumed) AS resumed,
    sumState(srv_early) AS early
FROM {{.From}}
WHERE reused = 0 AND error = '' AND (got = 'h2' OR got = 'h3') AND source = 'browser'
  AND bitAnd(exclusions, {{.BotBit}}) = 0
GROUP BY hour, site, continent, country, {{template "design" .}}, got, retried
{{- end}}
