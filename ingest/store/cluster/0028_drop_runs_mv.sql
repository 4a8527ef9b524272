-- The runs table's view is rebuilt with the runs' samples (0030).
{{template "migrations/0040_drop_runs_mv.sql" .}}
