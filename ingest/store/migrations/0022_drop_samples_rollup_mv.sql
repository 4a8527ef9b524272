-- The rollup is rebuilt keyed by batch order too (0022-0026), so that the
-- headline can weigh the h2first and h3first runs equally. Its rows are all
-- derived from samples: nothing is lost by dropping them.
DROP TABLE IF EXISTS samples_rollup_mv
