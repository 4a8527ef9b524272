-- The Distributed table takes its structure from samples_rollup_local when it is
-- created; 18.16 refuses ALTER ON CLUSTER on a Distributed table over
-- replicated shards, so it is created again (0019). It holds no rows
-- (inserts are synchronous); an insert in between fails and its spool
-- retries.
DROP TABLE IF EXISTS {{.Name "samples_rollup"}}{{.OnCluster}}
