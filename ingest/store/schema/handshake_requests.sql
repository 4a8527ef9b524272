-- The requests handshake_rollup digests by hour, one row each and sorted
-- by time: browser requests of every phase that opened a new connection
-- (reused = 0), successful, over h2 or h3, bots' runs left out. A report
-- from the rollup reads the partial hours at its window's edges here
-- (queries/sql/handshakes_rollup.sql), a range of the key of the edge's
-- own minutes, where samples, sorted by run within an hour, is read whole
-- hours. It holds a run's warm-ups and the few parallel requests that
-- opened a connection, with only the columns the handshakes section
-- groups, selects and digests.
CREATE TABLE IF NOT EXISTS {{.Local "handshake_requests"}}{{.OnCluster}}
(
    time            DateTime('UTC'),
    site            String,
    continent       String,
    country         String,
{{template "design columns" .}}
    got             Enum8('unknown' = 0, 'h1' = 1, 'h2' = 2, 'h3' = 3),
    retried         UInt8,
    duration_ms     Float32,
    connect_ms      Float32,
    resumed         UInt8,
    early           UInt8,
    source          Enum8('browser' = 1, 'agent' = 2) ALIAS CAST('browser' AS Enum8('browser' = 1, 'agent' = 2))
)
ENGINE = {{.Engine "MergeTree" "handshake_requests"}}
PARTITION BY toYYYYMM(time)
ORDER BY (site, time)
SETTINGS index_granularity = 8192, old_parts_lifetime = 10
{{- if .Cluster}};
{{template "schema/distributed.sql" (.Over "handshake_requests" "cityHash64(site, toStartOfHour(time))")}}{{end}}
