-- The runs table's view is rebuilt to keep agent runs out (0021).
DROP TABLE IF EXISTS /*DATABASE*/.runs_mv ON CLUSTER /*CLUSTER*/
