-- One row per browser run, whatever phase it reached (schema/run_facts.sql):
-- the table, every run stored so far, then the view that adds each run
-- inserted next. Migrations run before ingest starts, so no run arrives
-- between the copy and the view. Run again after an interruption, one
-- server starts the copy over; a cluster's copy may hold a run twice until
-- ReplacingMergeTree merges the two (18.16 forwards TRUNCATE … ON CLUSTER
-- without credentials). The first step written once for both deployments.
{{template "schema/run_facts.sql" .}};
{{- if not .Cluster}}
TRUNCATE TABLE run_facts;
{{- end}}
INSERT INTO {{.Name "run_facts"}} (time, site, run_id, continent, country, subdivision, asn, browser, ect, collector,
                  param_parallel, param_bytes, param_warmup, beacon_major, beacon_version, bot,
                  h3_wanted, first_known, first_h3, later_h3,
                  script_errors_idle, script_errors_warmup, script_errors_batch, script_errors_timing, script_errors_send)
{{- template "run facts from" (.Reading (.Name "samples"))}};
{{template "schema/run_facts_mv.sql" .}}
