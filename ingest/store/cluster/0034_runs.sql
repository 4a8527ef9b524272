-- runs over runs_local with the runs' failed requests (0032); as 0009.
CREATE TABLE IF NOT EXISTS /*DATABASE*/.runs ON CLUSTER /*CLUSTER*/ AS /*DATABASE*/.runs_local
ENGINE = Distributed(/*CLUSTER*/, /*DATABASE*/, runs_local, cityHash64(toString(run_id)))
