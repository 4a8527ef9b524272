-- Feeds run_facts from every block inserted into samples: browser runs,
-- every phase.
CREATE MATERIALIZED VIEW IF NOT EXISTS {{.Name "run_facts_mv"}}{{.OnCluster}} TO {{.Local "run_facts"}} AS
{{template "run facts from" (.Reading (.Local "samples"))}}

{{- define "run facts from"}}
SELECT
    time, site, run_id, continent, country, subdivision, asn, browser, ect,
    argMinIf(collector, seq, want = 'h3') AS collector,
    {{template "design" .}}, beacon_version, bot,
    max(want = 'h3') AS h3_wanted,
    max(want = 'h3' AND seq = 0 AND phase = 'warmup' AND error = '' AND (got = 'h1' OR got = 'h2' OR got = 'h3')) AS first_known,
    max(want = 'h3' AND seq = 0 AND phase = 'warmup' AND error = '' AND got = 'h3') AS first_h3,
    max(want = 'h3' AND seq > 0 AND error = '' AND got = 'h3') AS later_h3,
    script_errors_idle, script_errors_warmup, script_errors_batch, script_errors_timing, script_errors_send
    {{- if .Since 59}}, alt_svc{{end}}
FROM {{.From}}
WHERE source = 'browser'
-- Every other column is the same for all samples of a run: grouped by,
-- not aggregated.
GROUP BY time, site, run_id, continent, country, subdivision, asn, browser, ect,
         {{template "design" .}}, beacon_version, bot,
         script_errors_idle, script_errors_warmup, script_errors_batch, script_errors_timing, script_errors_send
         {{- if .Since 59}}, alt_svc{{end}}
{{- end}}
