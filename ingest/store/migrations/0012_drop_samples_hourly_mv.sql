-- The hourly rollup is rebuilt keyed by design and exclusions (0015-0018).
DROP TABLE IF EXISTS samples_hourly_mv
