-- Hourly rollup of parallel requests by site × region × design × batch
-- order × outcome × origin (want) × failed × exclusions, with t-digest
-- quantile states of the duration — a failed request's counted at the
-- script's 10 s timeout, for the intention-to-treat view; the headline
-- (exclusions = 0) never holds a failed request, whose run has the failed
-- bit. (t-digest, because merged t-digests stay close to exact and merged
-- sampling states read p95 low.) The design (parallel, bytes, warm-up count, script major
-- version) is in the key so that reports never pool runs of different
-- designs; the batch order (which batch the script started first) so that
-- the headline weighs both orders equally; the exclusions so that the
-- headline (exclusions = 0) and the excluded runs by reason come from the
-- same rows. Runs are counted with HyperLogLog states (uniqHLL12) because
-- merging uniq's exact states costs far more.
CREATE TABLE IF NOT EXISTS samples_rollup
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
ENGINE = AggregatingMergeTree
PARTITION BY toYYYYMM(hour)
ORDER BY (site, hour, continent, country, param_parallel, param_bytes, param_warmup, beacon_major, param_order, outcome, want, failed, exclusions)
SETTINGS index_granularity = 8192, old_parts_lifetime = 10
