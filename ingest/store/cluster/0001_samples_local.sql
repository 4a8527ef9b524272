-- Cluster mode (store.MigrateCluster): the samples table of every shard,
-- replicated within the shard through ZooKeeper/Keeper. Its columns, sort
-- key and partitioning are those the single-server migrations arrive at
-- (TestCluster compares them). {shard} and
-- {replica} are the servers' macros; /*CLUSTER*/ and /*DATABASE*/ are
-- filled in by h3rum with checked identifiers.
CREATE TABLE IF NOT EXISTS /*DATABASE*/.samples_local ON CLUSTER /*CLUSTER*/
(
    time             DateTime('UTC'),
    site             String,
    run_id           UUID,
    seq              UInt8,
    phase            Enum8('warmup' = 1, 'parallel' = 2),
    want             Enum8('unknown' = 0, 'h1' = 1, 'h2' = 2, 'h3' = 3),
    got              Enum8('unknown' = 0, 'h1' = 1, 'h2' = 2, 'h3' = 3),
    outcome          Enum8('other' = 0, 'h2' = 1, 'h3' = 2, 'wanted_h3_got_h2' = 3),
    exclusions       UInt8,
    cold             UInt8,
    start_ms         Float32,
    duration_ms      Float32,
    dns_ms           Float32,
    connect_ms       Float32,
    tls_ms           Float32,
    ttfb_ms          Float32,
    download_ms      Float32,
    reused           UInt8,
    transfer_size    UInt32,
    error            String,
    srv_present      UInt8,
    srv_proto        Enum8('unknown' = 0, 'h1' = 1, 'h2' = 2, 'h3' = 3),
    srv_handle_ms    Float32,
    srv_rtt_ms       Float32,
    srv_min_rtt_ms   Float32,
    srv_rttvar_ms    Float32,
    srv_lost         UInt32,
    srv_conn_id      String,
    collector        String,
    srv_conn_reqs    UInt32,
    srv_conn_age_ms  Float32 DEFAULT CAST(-1, 'Float32'),
    srv_resumed      UInt8,
    srv_early        UInt8,
    partial          UInt8,
    page_origin      String,
    beacon_version   String,
    beacon_major     UInt16,
    param_parallel   UInt8,
    param_warmup     UInt8,
    param_bytes      UInt32,
    param_order      Enum8('h2first' = 1, 'h3first' = 2),
    param_trigger    Enum8('load' = 1, 'manual' = 2),
    continent        String,
    country          String,
    subdivision      String,
    city_id          UInt32,
    asn              UInt32,
    as_org           String,
    browser          String,
    browser_major    UInt16,
    platform         String,
    mobile           UInt8,
    ect              String,
    net_rtt_ms       Float32,
    net_downlink     Float32,
    bot              UInt8
)
ENGINE = ReplicatedReplacingMergeTree('/clickhouse/tables/{shard}//*DATABASE*//samples_local', '{replica}')
PARTITION BY toYYYYMM(time)
ORDER BY (site, toStartOfHour(time), run_id, seq)
SETTINGS index_granularity = 8192, old_parts_lifetime = 10
