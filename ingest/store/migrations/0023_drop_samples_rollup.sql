DROP TABLE IF EXISTS samples_rollup
