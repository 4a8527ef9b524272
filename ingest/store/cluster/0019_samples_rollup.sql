-- samples_rollup over samples_rollup_local with its source (0017); as 0004.
CREATE TABLE IF NOT EXISTS /*DATABASE*/.samples_rollup ON CLUSTER /*CLUSTER*/ AS /*DATABASE*/.samples_rollup_local
ENGINE = Distributed(/*CLUSTER*/, /*DATABASE*/, samples_rollup_local)
