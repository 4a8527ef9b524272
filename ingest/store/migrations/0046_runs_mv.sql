-- The runs table's view (0042) with the run's failed requests (0044): the
-- view schema/runs_mv.sql defines still.
{{template "schema/runs_mv.sql" .}}
