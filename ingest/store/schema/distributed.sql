-- Cluster mode's Distributed table over the shards' Table_local tables,
-- as collectors insert into and reports read it, under the name the single
-- server's table has; sharded by Key (if any). A table's file renders it
-- after the table, with dialect.Over.
CREATE TABLE IF NOT EXISTS {{.Name .Table}}{{.OnCluster}} AS {{.Local .Table}}
ENGINE = {{.Distributed .Table .Key}}
