-- The runs table's view is rebuilt with the run's samples (0042).
DROP TABLE IF EXISTS {{.Name "runs_mv"}}{{.OnCluster}}
