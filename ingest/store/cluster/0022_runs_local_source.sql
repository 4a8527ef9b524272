-- The runs table holds browser runs only (0021); migrations/0038.
{{template "migrations/0038_runs_source.sql" .}}
