-- The rollup holds browser rows only (0034): its source, as a column, so
-- that one source filter serves raw rows and the rollup alike.
ALTER TABLE {{.Local "samples_rollup"}}{{.OnCluster}} ADD COLUMN source Enum8('browser' = 1, 'agent' = 2) ALIAS CAST('browser' AS Enum8('browser' = 1, 'agent' = 2))
