-- migrations/0028_runs.sql on every shard, replicated within it; runs are
-- sharded like their samples.
{{template "migrations/0028_runs.sql" .}}
