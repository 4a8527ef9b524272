-- The runs table holds browser runs only (0021); see migrations/0038.
ALTER TABLE /*DATABASE*/.runs_local ON CLUSTER /*CLUSTER*/ ADD COLUMN source Enum8('browser' = 1, 'agent' = 2) ALIAS CAST('browser' AS Enum8('browser' = 1, 'agent' = 2))
