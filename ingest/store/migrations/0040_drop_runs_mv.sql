-- The runs table's view is rebuilt with the run's samples (0042).
DROP TABLE IF EXISTS runs_mv
