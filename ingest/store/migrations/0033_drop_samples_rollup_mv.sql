-- The rollup's view is rebuilt to keep agent rows out (0034).
DROP TABLE IF EXISTS {{.Name "samples_rollup_mv"}}{{.OnCluster}}
