-- Feeds handshake_requests from every block inserted into samples.
CREATE MATERIALIZED VIEW IF NOT EXISTS {{.Name "handshake_requests_mv"}}{{.OnCluster}} TO {{.Local "handshake_requests"}} AS
{{template "handshake requests from" (.Reading (.Local "samples"))}}

{{- define "handshake requests from"}}
SELECT
    time, site, continent, country, {{template "design" .}}, got, srv_retry AS retried,
    duration_ms, connect_ms, srv_resumed AS resumed, srv_early AS early
FROM {{.From}}
WHERE reused = 0 AND error = '' AND (got = 'h2' OR got = 'h3') AND source = 'browser'
  AND bitAnd(exclusions, {{.BotBit}}) = 0
{{- end}}
