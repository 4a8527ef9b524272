-- One row per Network Error Logging report browsers uploaded to /reports:
-- about a request to one of the two test origins, failed or (sampled)
-- successful. Only origins are kept, never a path, query or user agent.
-- (batch_id, seq) identifies a report: batch_id is made when the upload is
-- accepted and spooled with it, so a replay finds the rows a first insert
-- left (store.NELStored) and ReplacingMergeTree folds any copy at merge
-- time. Runs 18.16 and current versions alike: no TTL, codecs,
-- LowCardinality or Nullable.
CREATE TABLE IF NOT EXISTS {{.Local "nel_reports"}}{{.OnCluster}}
(
    time              DateTime('UTC'),
    received          DateTime('UTC'),
    batch_id          UUID,
    seq               UInt16,
    origin            String,
    probe             UInt8,
    page_origin       String,
    type              String,
    phase             Enum8('dns' = 1, 'connection' = 2, 'application' = 3),
    protocol          Enum8('unknown' = 0, 'h1' = 1, 'h2' = 2, 'h3' = 3),
    protocol_raw      String,
    method            String,
    status_code       UInt16,
    elapsed_ms        Float32,
    server_ip         String,
    sampling_fraction Float64,
{{template "enrichment columns"}}
    bot               UInt8
)
ENGINE = {{.Engine "ReplacingMergeTree" "nel_reports"}}
PARTITION BY toYYYYMM(time)
ORDER BY (toDate(time), type, batch_id, seq)
SETTINGS index_granularity = 8192, old_parts_lifetime = 10
{{- if .Cluster}};
-- Cluster mode: NEL reports as collectors insert and reports read them,
-- sharded by upload so that an upload's reports stay together (the replay
-- check looks for whole uploads).
{{template "schema/distributed.sql" (.Over "nel_reports" "cityHash64(toString(batch_id))")}}{{end}}
