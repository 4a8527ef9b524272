-- One row per probe request (a sample). Replays from the spool are
-- idempotent: (run_id, seq) under one receive time identifies a sample, and
-- ReplacingMergeTree folds a replayed copy into the original at merge time.
-- Sorted by hour, so that a report's raw edge (the open hour beside the
-- rollup's closed ones) reads only that hour's granules. Runs 18.16 and
-- current versions alike: no TTL, codecs, LowCardinality or DateTime64.
--
-- source: who measured it, a visitor's browser running the beacon or
-- `h3rum agent` (reports never pool the two). phase: handshake is the
-- agent's, a request on a new connection. outcome: computed once at ingest
-- (store.OutcomeOf). exclusions: why the run is left out of the
-- like-for-like headline (store.Exclusions). cold: a batch request on a
-- connection its origin's warm-up did not use. collector: the POP whose
-- probe served it (store.CollectorOf). srv_conn_age_ms: the age of the
-- server connection it arrived on, -1 where none was reported.
-- script_errors_*: the script's own errors in the run by stage, the same in
-- every sample of a run. alt_svc: what the page's own loads could have
-- taught the browser of the H3 origin before the run's first request to it
-- (beacon.AltSvc: 0 not recorded, wire v1 and every run stored before 0058;
-- 1 nothing; 2 the script itself over TCP; 3 another load over TCP; 4 one
-- already over h3; 5 its protocol hidden). beacon_major: one of the design fields reports
-- never pool across (with param_parallel, param_bytes, param_warmup and
-- param_extra, the further design parameters: beacon.Params.Extra).
-- run_flags: what run_counts and run_fact_counts count of the run
-- (store.RunFlags), on its first parallel sample and its first sample
-- only, 0 on the others.
CREATE TABLE IF NOT EXISTS {{.Local "samples"}}{{.OnCluster}}
(
    time                 DateTime('UTC'),
    site                 String,
    source               Enum8('browser' = 1, 'agent' = 2) DEFAULT 'browser',
    run_id               UUID,
    seq                  UInt8,
    phase                Enum8('warmup' = 1, 'parallel' = 2, 'handshake' = 3),
    want                 Enum8('unknown' = 0, 'h1' = 1, 'h2' = 2, 'h3' = 3),
    got                  Enum8('unknown' = 0, 'h1' = 1, 'h2' = 2, 'h3' = 3),
    outcome              Enum8('other' = 0, 'h2' = 1, 'h3' = 2, 'wanted_h3_got_h2' = 3),
    exclusions           UInt8,
    cold                 UInt8,
    start_ms             Float32,
    duration_ms          Float32,
    dns_ms               Float32,
    connect_ms           Float32,
    tls_ms               Float32,
    ttfb_ms              Float32,
    download_ms          Float32,
    reused               UInt8,
    transfer_size        UInt32,
    error                String,
    srv_present          UInt8,
    srv_proto            Enum8('unknown' = 0, 'h1' = 1, 'h2' = 2, 'h3' = 3),
    srv_handle_ms        Float32,
    srv_rtt_ms           Float32,
    srv_min_rtt_ms       Float32,
    srv_rttvar_ms        Float32,
    srv_lost             UInt32,
    srv_conn_id          String,
    collector            String,
    srv_conn_reqs        UInt32,
    srv_conn_age_ms      Float32 DEFAULT -1,
    srv_resumed          UInt8,
    srv_early            UInt8,
{{- if .Since 57}}
    srv_retry            UInt8,
{{- end}}
    partial              UInt8,
    script_errors_idle   UInt16 DEFAULT 0,
    script_errors_warmup UInt16 DEFAULT 0,
    script_errors_batch  UInt16 DEFAULT 0,
    script_errors_timing UInt16 DEFAULT 0,
    script_errors_send   UInt16 DEFAULT 0,
{{- if .Since 58}}
    alt_svc              UInt8,
{{- end}}
    page_origin          String,
    beacon_version       String,
    beacon_major         UInt16,
    param_parallel       UInt8,
    param_warmup         UInt8,
    param_bytes          UInt32,
{{- if .Since 55}}
    param_extra          String,
{{- end}}
    param_order          Enum8('h2first' = 1, 'h3first' = 2),
    param_trigger        Enum8('load' = 1, 'manual' = 2),
{{template "enrichment columns"}}
    platform             String,
    mobile               UInt8,
    ect                  String,
    net_rtt_ms           Float32,
    net_downlink         Float32,
    bot                  UInt8,
    run_flags            UInt32 DEFAULT 0
)
ENGINE = {{.Engine "ReplacingMergeTree" "samples"}}
PARTITION BY toYYYYMM(time)
ORDER BY (site, toStartOfHour(time), run_id, seq)
SETTINGS index_granularity = 8192, old_parts_lifetime = 10
{{- if .Cluster}};
-- Cluster mode: what collectors insert into and reports read, the shards'
-- samples_local, sharded by run id so that a run's samples stay together
-- (the per-run queries and the exactly-once check rely on it). The hash
-- reads the UUID as text: cityHash64 of a UUID fails at insert time on
-- 18.16.
{{template "schema/distributed.sql" (.Over "samples" "cityHash64(toString(run_id))")}}{{end}}

{{- /* Where a report came from and what sent it, as enrichment fills it
(ingest/enrich.go): the columns samples and nel_reports share. */ -}}
{{define "enrichment columns"}}    continent            String,
    country              String,
    subdivision          String,
    city_id              UInt32,
    asn                  UInt32,
    as_org               String,
    browser              String,
    browser_major        UInt16,{{end}}
