-- The runs table's view is rebuilt with the runs' samples (0030).
DROP TABLE IF EXISTS /*DATABASE*/.runs_mv ON CLUSTER /*CLUSTER*/
