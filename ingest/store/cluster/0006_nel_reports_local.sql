-- Network Error Logging reports of every shard (see
-- migrations/0027_nel_reports.sql), replicated within the shard.
CREATE TABLE IF NOT EXISTS /*DATABASE*/.nel_reports_local ON CLUSTER /*CLUSTER*/
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
    continent         String,
    country           String,
    subdivision       String,
    city_id           UInt32,
    asn               UInt32,
    as_org            String,
    browser           String,
    browser_major     UInt16,
    bot               UInt8
)
ENGINE = ReplicatedReplacingMergeTree('/clickhouse/tables/{shard}//*DATABASE*//nel_reports_local', '{replica}')
PARTITION BY toYYYYMM(time)
ORDER BY (toDate(time), type, batch_id, seq)
SETTINGS index_granularity = 8192, old_parts_lifetime = 10
