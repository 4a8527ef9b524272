-- samples.alt_svc (0058) as a column of run_facts: 0, not recorded, for
-- the runs stored before. The view is made again to carry it (migrations
-- run before ingest starts, so no insert arrives between its drop and its
-- creation), and in cluster mode the Distributed table, which takes its
-- structure when it is created.
ALTER TABLE {{.Local "run_facts"}}{{.OnCluster}} ADD COLUMN alt_svc UInt8 AFTER script_errors_send;
{{- if .Cluster}}
DROP TABLE IF EXISTS {{.Name "run_facts"}}{{.OnCluster}};
{{template "schema/distributed.sql" (.Over "run_facts" "cityHash64(toString(run_id))")}};
{{- end}}
DROP TABLE IF EXISTS {{.Name "run_facts_mv"}}{{.OnCluster}};
{{template "schema/run_facts_mv.sql" .}}
