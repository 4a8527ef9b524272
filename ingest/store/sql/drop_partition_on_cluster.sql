-- Retention in cluster mode: the rows of an expired month of a local table
-- deleted on every shard. A mutation rather than DROP PARTITION: on 18.16
-- a replica that is not its shard's leader forwards DROP PARTITION to the
-- leader without credentials, which a server with a password refuses;
-- a mutation goes through ZooKeeper and runs on every replica (it works
-- in the background: the rows go within seconds). /*DATABASE*/, /*TABLE*/,
-- /*TIME*/ and /*CLUSTER*/ are filled in by h3rum with checked identifiers.
-- Parameter: the month (YYYYMM).
ALTER TABLE /*DATABASE*/./*TABLE*/ ON CLUSTER /*CLUSTER*/ DELETE WHERE toYYYYMM(/*TIME*/) = ?
