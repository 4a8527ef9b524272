-- The runs' failed requests apart (migrations/0044).
{{template "migrations/0044_runs_failures.sql" .}}
