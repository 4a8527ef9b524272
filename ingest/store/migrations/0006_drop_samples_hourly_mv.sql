-- Replaced by 0007, which also carries the outcome into the rollup.
DROP TABLE IF EXISTS samples_hourly_mv
