-- samples over samples_local with the script's errors (0037); as 0014.
CREATE TABLE IF NOT EXISTS /*DATABASE*/.samples ON CLUSTER /*CLUSTER*/ AS /*DATABASE*/.samples_local
ENGINE = Distributed(/*CLUSTER*/, /*DATABASE*/, samples_local, cityHash64(toString(run_id)))
