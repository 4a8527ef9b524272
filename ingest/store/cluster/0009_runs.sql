-- The runs as reports read them, sharded by run id as samples are.
CREATE TABLE IF NOT EXISTS /*DATABASE*/.runs ON CLUSTER /*CLUSTER*/ AS /*DATABASE*/.runs_local
ENGINE = Distributed(/*CLUSTER*/, /*DATABASE*/, runs_local, cityHash64(toString(run_id)))
