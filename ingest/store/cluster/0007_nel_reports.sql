-- NEL reports as collectors insert and reports read them, sharded by
-- upload so that an upload's reports stay together (the replay check
-- looks for whole uploads).
CREATE TABLE IF NOT EXISTS /*DATABASE*/.nel_reports ON CLUSTER /*CLUSTER*/ AS /*DATABASE*/.nel_reports_local
ENGINE = Distributed(/*CLUSTER*/, /*DATABASE*/, nel_reports_local, cityHash64(toString(batch_id)))
