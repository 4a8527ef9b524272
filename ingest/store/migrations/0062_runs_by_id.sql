-- runs_by_id (schema/runs_by_id.sql): runs sorted for the bootstrap's
-- sample, filled from runs, which holds every run exactly once; its view
-- dropped first, then its tables, so that a step run again after an
-- interruption starts from an empty table. Migrations run before ingest
-- starts, so no row arrives between the copy and the view.
DROP TABLE IF EXISTS {{.Name "runs_by_id_mv"}}{{.OnCluster}};
{{- if .Cluster}}
DROP TABLE IF EXISTS {{.Name "runs_by_id"}}{{.OnCluster}};
{{- end}}
DROP TABLE IF EXISTS {{.Local "runs_by_id"}}{{.OnCluster}};
{{template "schema/runs_by_id.sql" .}};
INSERT INTO {{.Name "runs_by_id"}} (time, site, run_id, continent, country, subdivision, asn, browser, ect,
                  {{template "design" .}}, param_order, bot, exclusions, h3n, h3ok, cold_h2, cold_h3,
                  durations, outcomes, wants, errors, failed_wants, failed_errors)
SELECT time, site, run_id, continent, country, subdivision, asn, browser, ect,
       {{template "design" .}}, param_order, bot, exclusions, h3n, h3ok, cold_h2, cold_h3,
       durations, outcomes, wants, errors, failed_wants, failed_errors
FROM {{.Name "runs"}};
{{template "schema/runs_by_id_mv.sql" .}}
