-- The rollup holds browser rows only (0016); see migrations/0035.
ALTER TABLE /*DATABASE*/.samples_rollup_local ON CLUSTER /*CLUSTER*/ ADD COLUMN source Enum8('browser' = 1, 'agent' = 2) ALIAS CAST('browser' AS Enum8('browser' = 1, 'agent' = 2))
