-- runs is created again over runs_local with its new columns (0027); as
-- 0023.
DROP TABLE IF EXISTS {{.Name "runs"}}{{.OnCluster}}
