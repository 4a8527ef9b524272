-- The runs table's view is rebuilt to keep agent runs out (0037).
DROP TABLE IF EXISTS {{.Name "runs_mv"}}{{.OnCluster}}
