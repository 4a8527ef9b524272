-- What the page's own loads could have taught the browser of the H3 origin
-- before the run's first request to it (beacon.AltSvc, the report's "alt"):
-- 0, not recorded, for the rows stored before, as for every report of wire
-- v1. In cluster mode the Distributed table takes its structure when it is
-- created, so it is made again.
ALTER TABLE {{.Local "samples"}}{{.OnCluster}} ADD COLUMN alt_svc UInt8 AFTER script_errors_send
{{- if .Cluster}};
DROP TABLE IF EXISTS {{.Name "samples"}}{{.OnCluster}};
{{template "schema/distributed.sql" (.Over "samples" "cityHash64(toString(run_id))")}}
{{- end}}
