-- samples over samples_local with its new columns (0011, 0012); as 0002.
CREATE TABLE IF NOT EXISTS /*DATABASE*/.samples ON CLUSTER /*CLUSTER*/ AS /*DATABASE*/.samples_local
ENGINE = Distributed(/*CLUSTER*/, /*DATABASE*/, samples_local, cityHash64(toString(run_id)))
