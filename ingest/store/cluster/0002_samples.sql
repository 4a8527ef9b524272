-- What collectors insert into and reports read: the shards' samples_local,
-- sharded by run id so that a run's samples stay together (the per-run
-- queries and the exactly-once check rely on a run being on one shard).
-- The hash reads the UUID as text: cityHash64 of a UUID fails at insert
-- time on 18.16.
CREATE TABLE IF NOT EXISTS /*DATABASE*/.samples ON CLUSTER /*CLUSTER*/ AS /*DATABASE*/.samples_local
ENGINE = Distributed(/*CLUSTER*/, /*DATABASE*/, samples_local, cityHash64(toString(run_id)))
