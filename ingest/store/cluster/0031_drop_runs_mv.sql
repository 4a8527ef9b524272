-- The runs table's view is rebuilt with the runs' failed requests (0036).
{{template "migrations/0043_drop_runs_mv.sql" .}}
