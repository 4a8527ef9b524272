-- The runs again from every sample stored so far, now with their samples
-- (see migrations/0041). The rows stored before, the ones without samples
-- (a run has at least one parallel sample), are deleted by a mutation:
-- 18.16 forwards TRUNCATE … ON CLUSTER without credentials, which a server
-- with a password refuses, while a mutation goes through ZooKeeper to
-- every replica. It works in the background, so for a few seconds a run
-- may be counted twice; its condition keeps it off the rows inserted next
-- whatever parts merge meanwhile. Run again after an interruption, the
-- copy may hold a run twice until ReplacingMergeTree merges the two. The
-- rows are read and written through the Distributed tables: a run's row
-- goes to the shard of its samples (the same sharding key).
ALTER TABLE {{.Local "runs"}}{{.OnCluster}} DELETE WHERE empty(durations);
{{template "0041 runs from samples" .}}
