-- The rollup's view is rebuilt to keep agent rows out (0016).
DROP TABLE IF EXISTS /*DATABASE*/.samples_rollup_mv ON CLUSTER /*CLUSTER*/
