-- One row per run, made by runs_mv from its parallel samples as they are
-- inserted (a run is always inserted in one block, and the view groups each
-- block by run), holding what the report's per-run figures need: the run's
-- exclusions, its H3-batch requests and those served over h3 without
-- error, its cold requests by origin, and its parallel samples as arrays
-- with one element per request (duration, outcome, origin, error code: ''
-- for a success), so that the complete report's bootstrap and paired view
-- read one row per run instead of 13 samples. failed_wants and
-- failed_errors hold the failed requests alone (empty for most runs) for
-- the failures section and the intention-to-treat view's failed runs.
-- The rows are sorted by time in granules of 1 024 rows (step 64), for
-- the reads by time; the bootstrap's sample reads runs_by_id, the same
-- rows sorted by continent and day.
-- Exactly once like samples: a replayed run is left out of the insert
-- before the view sees it (store.Stored). It holds browser runs only:
-- source is a constant, like the rollup's.
CREATE TABLE IF NOT EXISTS {{.Local "runs"}}{{.OnCluster}}
(
{{template "run columns" .}}
    param_order     Enum8('h2first' = 1, 'h3first' = 2),
    bot             UInt8,
    exclusions      UInt8,
    h3n             UInt16,
    h3ok            UInt16,
    cold_h2         UInt16,
    cold_h3         UInt16,
    durations       Array(Float32),
    outcomes        Array(Enum8('other' = 0, 'h2' = 1, 'h3' = 2, 'wanted_h3_got_h2' = 3)),
    wants           Array(Enum8('unknown' = 0, 'h1' = 1, 'h2' = 2, 'h3' = 3)),
    errors          Array(String),
    failed_wants    Array(Enum8('unknown' = 0, 'h1' = 1, 'h2' = 2, 'h3' = 3)) DEFAULT arrayFilter((w, e) -> e != '', wants, errors),
    failed_errors   Array(String) DEFAULT arrayFilter(e -> e != '', errors),
{{template "per-run table" (.Over "runs" "cityHash64(toString(run_id))")}}

{{- /* What runs and run_facts share, one row a run each: the run's
identity, place and design columns, and the end of the table — source as
a constant (browser runs only), ReplacingMergeTree by site, hour and run
id (runs: and continent before the run id, from step 61; by site, time
and run id from step 64, and run_facts from step 67, so that a read by
time reads the granules of its minutes alone: the minutes at a window's
edges), and in cluster mode the Distributed table sharded by run id as samples
are (the table's view writes each run's row to the shard of its samples). */ -}}
{{define "run columns"}}    time            DateTime('UTC'),
    site            String,
    run_id          UUID,
    continent       String,
    country         String,
    subdivision     String,
    asn             UInt32,
    browser         String,
    ect             String,
{{template "design columns" .}}{{end}}
{{define "per-run table"}}    source          Enum8('browser' = 1, 'agent' = 2) ALIAS CAST('browser' AS Enum8('browser' = 1, 'agent' = 2))
)
ENGINE = {{.Engine "ReplacingMergeTree" .Table}}
PARTITION BY toYYYYMM(time)
{{- if or (and (eq .Table "runs") (.Since 64)) (and (eq .Table "run_facts") (.Since 67))}}
ORDER BY (site, time, run_id)
SETTINGS index_granularity = 1024, old_parts_lifetime = 10
{{- else if and (eq .Table "runs") (.Since 61)}}
ORDER BY (site, toStartOfHour(time), continent, run_id)
SETTINGS index_granularity = 1024, old_parts_lifetime = 10
{{- else}}
ORDER BY (site, toStartOfHour(time), run_id)
SETTINGS index_granularity = 8192, old_parts_lifetime = 10
{{- end}}
{{- if .Cluster}};
{{template "schema/distributed.sql" .}}{{end}}
{{- end}}
