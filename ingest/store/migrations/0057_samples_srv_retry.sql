-- Whether the request's connection paid a QUIC Retry's round trip before
-- its handshake (Server-Timing retry): 0 for the rows stored before and
-- for every request the collector did not mark. In cluster mode the
-- Distributed table takes its structure when it is created, so it is made
-- again.
ALTER TABLE {{.Local "samples"}}{{.OnCluster}} ADD COLUMN srv_retry UInt8 AFTER srv_early
{{- if .Cluster}};
DROP TABLE IF EXISTS {{.Name "samples"}}{{.OnCluster}};
{{template "schema/distributed.sql" (.Over "samples" "cityHash64(toString(run_id))")}}
{{- end}}
