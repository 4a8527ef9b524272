-- Cluster mode's record of applied migrations: one table that every server
-- of the cluster holds as a replica (one ZooKeeper path for all shards), so
-- that any server answers which versions the cluster has.
CREATE TABLE IF NOT EXISTS /*DATABASE*/.schema_migrations ON CLUSTER /*CLUSTER*/
(
    version    UInt32,
    name       String,
    applied_at DateTime('UTC')
)
ENGINE = ReplicatedMergeTree('/clickhouse/tables/all//*DATABASE*//schema_migrations', '{shard}-{replica}')
ORDER BY version
