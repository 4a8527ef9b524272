-- The runs table holds browser runs only (0037): its source, as a column,
-- like the rollup's (0035).
ALTER TABLE {{.Local "runs"}}{{.OnCluster}} ADD COLUMN source Enum8('browser' = 1, 'agent' = 2) ALIAS CAST('browser' AS Enum8('browser' = 1, 'agent' = 2))
