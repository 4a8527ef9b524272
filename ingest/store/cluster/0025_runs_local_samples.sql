-- The runs' batch order, bot flag and parallel samples (migrations/0039).
{{template "migrations/0039_runs_samples.sql" .}}
