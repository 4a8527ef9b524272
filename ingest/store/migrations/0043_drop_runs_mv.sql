-- The runs table's view is rebuilt with each run's failed requests (0046).
DROP TABLE IF EXISTS {{.Name "runs_mv"}}{{.OnCluster}}
