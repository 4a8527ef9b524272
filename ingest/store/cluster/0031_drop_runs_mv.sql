-- The runs table's view is rebuilt with the runs' failed requests (0036).
DROP TABLE IF EXISTS /*DATABASE*/.runs_mv ON CLUSTER /*CLUSTER*/
