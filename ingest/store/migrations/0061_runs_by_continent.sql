-- The runs table sorted by continent within each hour, in granules of 1 024
-- rows (schema/runs.sql), so that the bootstrap's sample of a continent
-- is a short range of the key. Neither can be altered in place, so the
-- table is made again and filled from samples, which hold every run's
-- requests as long as retention keeps the runs (as 0041 did): its view
-- dropped first, then its tables, so that a step run again after an
-- interruption starts from an empty table. Migrations run before ingest
-- starts, so no row arrives between the copy and the view.
DROP TABLE IF EXISTS {{.Name "runs_mv"}}{{.OnCluster}};
{{- if .Cluster}}
DROP TABLE IF EXISTS {{.Name "runs"}}{{.OnCluster}};
{{- end}}
DROP TABLE IF EXISTS {{.Local "runs"}}{{.OnCluster}};
{{template "schema/runs.sql" .}};
INSERT INTO {{.Name "runs"}} (time, site, run_id, continent, country, subdivision, asn, browser, ect,
                  {{template "design" .}}, param_order, bot, exclusions, h3n, h3ok, cold_h2, cold_h3,
                  durations, outcomes, wants, errors, failed_wants, failed_errors)
{{- template "runs from" (.Reading (.Name "samples"))}};
{{template "schema/runs_mv.sql" .}}
