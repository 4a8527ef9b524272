-- The runs table's view is rebuilt to keep agent runs out (0021).
{{template "migrations/0036_drop_runs_mv.sql" .}}
