-- Cluster mode: the Distributed samples table made again over samples_local
-- with run_flags (0049); nothing on one server.
{{- if .Cluster}}
DROP TABLE IF EXISTS {{.Name "samples"}}{{.OnCluster}};
{{template "schema/distributed.sql" (.Over "samples" "cityHash64(toString(run_id))")}}
{{- end}}
