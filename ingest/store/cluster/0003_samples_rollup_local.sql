-- The hourly rollup of every shard (see migrations/0024_samples_rollup.sql
-- for its design), replicated within the shard. The view (0005) feeds it
-- on the replica that receives an insert; replication copies the result,
-- as it copies samples_local's parts (fetched parts do not run views).
CREATE TABLE IF NOT EXISTS /*DATABASE*/.samples_rollup_local ON CLUSTER /*CLUSTER*/
(
    hour            DateTime('UTC'),
    site            String,
    continent       String,
    country         String,
    param_parallel  UInt8,
    param_bytes     UInt32,
    param_warmup    UInt8,
    beacon_major    UInt16,
    param_order     Enum8('h2first' = 1, 'h3first' = 2),
    outcome         Enum8('other' = 0, 'h2' = 1, 'h3' = 2, 'wanted_h3_got_h2' = 3),
    want            Enum8('unknown' = 0, 'h1' = 1, 'h2' = 2, 'h3' = 3),
    failed          UInt8,
    exclusions      UInt8,
    samples         AggregateFunction(count),
    runs            AggregateFunction(uniqHLL12, UUID),
    duration        AggregateFunction(quantilesTDigest(0.5, 0.75, 0.9, 0.95, 0.99), Float32)
)
ENGINE = ReplicatedAggregatingMergeTree('/clickhouse/tables/{shard}//*DATABASE*//samples_rollup_local', '{replica}')
PARTITION BY toYYYYMM(hour)
ORDER BY (site, hour, continent, country, param_parallel, param_bytes, param_warmup, beacon_major, param_order, outcome, want, failed, exclusions)
SETTINGS index_granularity = 8192, old_parts_lifetime = 10
