-- run_facts sorted by time (schema/runs.sql's "per-run table"), as 0064
-- sorted runs: a report reads it by time, and the minutes at a window's
-- edge before the five-minute twins' first slot read, sorted by hour, the
-- whole hour's runs. A table's sort key cannot be altered in place, so it
-- is made again and filled from samples as 0048 filled it: its view
-- dropped first, then its tables, so that a step run again after an
-- interruption starts from an empty table. Migrations run before ingest
-- starts, so no run arrives between the copy and the view.
DROP TABLE IF EXISTS {{.Name "run_facts_mv"}}{{.OnCluster}};
{{- if .Cluster}}
DROP TABLE IF EXISTS {{.Name "run_facts"}}{{.OnCluster}};
{{- end}}
DROP TABLE IF EXISTS {{.Local "run_facts"}}{{.OnCluster}};
{{template "schema/run_facts.sql" .}};
INSERT INTO {{.Name "run_facts"}} (time, site, run_id, continent, country, subdivision, asn, browser, ect, collector,
                  {{template "design" .}}, beacon_version, bot, h3_wanted, first_known, first_h3, later_h3,
                  script_errors_idle, script_errors_warmup, script_errors_batch, script_errors_timing, script_errors_send, alt_svc)
{{- template "run facts from" (.Reading (.Name "samples"))}};
{{template "schema/run_facts_mv.sql" .}}
