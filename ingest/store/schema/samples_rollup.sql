-- Hourly rollup of parallel requests by site × region × design × batch
-- order × outcome × origin (want) × failed × exclusions, fed by
-- samples_rollup_mv, with t-digest quantile states of the duration — a
-- failed request's counted at the script's timeout, for the
-- intention-to-treat view; the headline (exclusions = 0) never holds a
-- failed request, whose run has the failed bit. (t-digest, because merged
-- t-digests stay close to exact and merged sampling states read p95 low.) The design
-- (parallel, bytes, warm-up count, script major version, and last the
-- further design parameters, param_extra, 0056) is in the key so that
-- reports never pool runs of different designs; the batch order
-- (which batch the script started first) so that the headline weighs both
-- orders equally; the exclusions so that the headline and the excluded
-- runs by reason come from the same rows. Runs are counted with
-- HyperLogLog states (uniqHLL12: small, with a known standard error)
-- because merging uniq's exact states costs far more. It holds browser rows
-- only: source is a constant, so that one source filter serves raw rows
-- and the rollup alike.
CREATE TABLE IF NOT EXISTS {{.Local (.Rollup "samples_rollup")}}{{.OnCluster}}
(
{{template "hourly key" .}}
    param_order     Enum8('h2first' = 1, 'h3first' = 2),
    outcome         Enum8('other' = 0, 'h2' = 1, 'h3' = 2, 'wanted_h3_got_h2' = 3),
    want            Enum8('unknown' = 0, 'h1' = 1, 'h2' = 2, 'h3' = 3),
    failed          UInt8,
    exclusions      UInt8,
    samples         AggregateFunction(count),
    runs            AggregateFunction(uniqHLL12, UUID),
    duration        AggregateFunction(quantilesTDigest(0.5, 0.75, 0.9, 0.95, 0.99), Float32),
    source          Enum8('browser' = 1, 'agent' = 2) ALIAS CAST('browser' AS Enum8('browser' = 1, 'agent' = 2))
)
ENGINE = {{.Engine "AggregatingMergeTree" (.Rollup "samples_rollup")}}
PARTITION BY toYYYYMM(hour)
{{- if .Since 56}}
PRIMARY KEY (site, hour, continent, country, param_parallel, param_bytes, param_warmup, beacon_major, param_order, outcome, want, failed, exclusions)
ORDER BY (site, hour, continent, country, param_parallel, param_bytes, param_warmup, beacon_major, param_order, outcome, want, failed, exclusions, param_extra)
{{- else}}
ORDER BY (site, hour, continent, country, param_parallel, param_bytes, param_warmup, beacon_major, param_order, outcome, want, failed, exclusions)
{{- end}}
SETTINGS index_granularity = {{.Granularity}}, old_parts_lifetime = 10
{{- if .Cluster}};
-- Cluster mode: the rollup as reports read it, every shard's part of every
-- hour. The view writes to the local tables, on the replica that receives
-- an insert (replication copies the result); only a migration's rebuild
-- inserts into it (0056), spread by site and hour as the hourly tables'.
{{$table := .Rollup "samples_rollup" -}}
{{if .Since 56}}{{template "schema/distributed.sql" (.Over $table "cityHash64(site, hour)")}}
{{- else}}{{template "schema/distributed.sql" (.Over $table "")}}{{end}}{{end}}
