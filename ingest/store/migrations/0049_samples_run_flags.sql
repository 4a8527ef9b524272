-- What run_counts counts of each run (store.RunFlags), on its first
-- parallel sample, 0 on the others and on the rows stored before (which
-- migration 0051 counts from the runs table). A step of its own: 18.16 has
-- no ADD COLUMN IF NOT EXISTS, and a step runs again from its first
-- statement.
ALTER TABLE {{.Local "samples"}}{{.OnCluster}} ADD COLUMN run_flags UInt32 DEFAULT 0 AFTER bot
