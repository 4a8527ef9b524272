-- The Distributed table takes its structure from samples_local when it is
-- created (as 0013): created again with the script's errors (0039).
DROP TABLE IF EXISTS {{.Name "samples"}}{{.OnCluster}}
