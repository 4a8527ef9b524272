-- The runs table's view (0030) with the runs' failed requests, as
-- migrations/0046: the view schema/runs_mv.sql defines still.
{{template "schema/runs_mv.sql" .}}
