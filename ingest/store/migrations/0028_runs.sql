-- One row per run, made from its parallel samples as they are inserted (a
-- run is always inserted in one block, and the view (0030) groups each
-- block by run), holding what the report's per-run counts need: the run's
-- exclusions, its H3-batch requests and those served over h3 without
-- error, and its cold requests by origin. The excluded runs by reason and
-- HTTP/3 availability per run then read one row per run instead of
-- grouping its 13 samples in every complete report.
-- Exactly once like samples: a replayed run is left out of the insert
-- before the view sees it (store.Stored).
CREATE TABLE IF NOT EXISTS {{.Local "runs"}}{{.OnCluster}}
(
    time            DateTime('UTC'),
    site            String,
    run_id          UUID,
    continent       String,
    country         String,
    subdivision     String,
    asn             UInt32,
    browser         String,
    ect             String,
    param_parallel  UInt8,
    param_bytes     UInt32,
    param_warmup    UInt8,
    beacon_major    UInt16,
    exclusions      UInt8,
    h3n             UInt16,
    h3ok            UInt16,
    cold_h2         UInt16,
    cold_h3         UInt16
)
ENGINE = {{.Engine "ReplacingMergeTree" "runs"}}
PARTITION BY toYYYYMM(time)
ORDER BY (site, toStartOfHour(time), run_id)
SETTINGS index_granularity = 8192, old_parts_lifetime = 10
