-- The rollup's view is rebuilt to keep agent rows out (0034).
DROP TABLE IF EXISTS samples_rollup_mv
