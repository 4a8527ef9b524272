-- The rollup as reports read it: every shard's part of every hour. Nothing
-- inserts into it (the view writes to the local tables), so it needs no
-- sharding key.
CREATE TABLE IF NOT EXISTS /*DATABASE*/.samples_rollup ON CLUSTER /*CLUSTER*/ AS /*DATABASE*/.samples_rollup_local
ENGINE = Distributed(/*CLUSTER*/, /*DATABASE*/, samples_rollup_local)
