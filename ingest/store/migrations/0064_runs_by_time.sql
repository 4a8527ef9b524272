-- The runs table sorted by time (schema/runs.sql): the reports' reads of
-- it are by time (a window, or the partial hours at its edges), and the
-- bootstrap's sample, which the continent order served, reads runs_by_id
-- since step 62. Made again and filled from samples as 0061 did.
{{template "migrations/0061_runs_by_continent.sql" .}}
