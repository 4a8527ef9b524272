-- Writes 0032's columns into the rows stored before, on every replica
-- (a mutation goes through ZooKeeper); migrations/0045.
{{template "migrations/0045_runs_failures_backfill.sql" .}}
