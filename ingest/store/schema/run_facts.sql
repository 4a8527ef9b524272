-- One row per browser run, whatever phase it reached, made by
-- run_facts_mv from all its samples as they are inserted (a run is always
-- inserted in one block, and the view groups each block by run): what the
-- sections that count runs over every phase need — how the run's first
-- request to the HTTP/3 origin went (first contact) and the script's own
-- errors — so that they read one row per run instead of grouping every
-- raw row of the window by run id (8 of the complete report's 9 s at 10 M
-- samples on a busy 18.16). The runs table holds only runs that reached
-- their parallel batches; this one also those cut short before.
--   h3_wanted    the run made a request to the HTTP/3 origin
--   first_known  its first request (seq 0, the first warm-up) succeeded
--                with a known protocol
--   first_h3     … over h3
--   later_h3     a later request to the HTTP/3 origin succeeded over h3
--   collector    the POP that served its first request to the HTTP/3
--                origin (the samples' collector can differ within a run)
-- Exactly once like samples (store.Stored); browser runs only: source is
-- a constant, as in the runs table.
CREATE TABLE IF NOT EXISTS {{.Local "run_facts"}}{{.OnCluster}}
(
    time                  DateTime('UTC'),
    site                  String,
    run_id                UUID,
    continent             String,
    country               String,
    subdivision           String,
    asn                   UInt32,
    browser               String,
    ect                   String,
    collector             String,
    param_parallel        UInt8,
    param_bytes           UInt32,
    param_warmup          UInt8,
    beacon_major          UInt16,
    beacon_version        String,
    bot                   UInt8,
    h3_wanted             UInt8,
    first_known           UInt8,
    first_h3              UInt8,
    later_h3              UInt8,
    script_errors_idle    UInt16,
    script_errors_warmup  UInt16,
    script_errors_batch   UInt16,
    script_errors_timing  UInt16,
    script_errors_send    UInt16,
    source                Enum8('browser' = 1, 'agent' = 2) ALIAS CAST('browser' AS Enum8('browser' = 1, 'agent' = 2))
)
ENGINE = {{.Engine "ReplacingMergeTree" "run_facts"}}
PARTITION BY toYYYYMM(time)
ORDER BY (site, toStartOfHour(time), run_id)
SETTINGS index_granularity = 8192, old_parts_lifetime = 10
{{- if .Cluster}};
-- Cluster mode: sharded by run id as samples are (run_facts_mv writes
-- each run's row to the shard of its samples).
{{template "schema/distributed.sql" (.Over "run_facts" "cityHash64(toString(run_id))")}}{{end}}
