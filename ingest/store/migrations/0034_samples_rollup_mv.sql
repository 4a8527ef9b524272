-- The rollup's view (0026) on browser rows only: agent runs are reported
-- from raw rows, never pooled with visitors'. It is the view
-- schema/samples_rollup_mv.sql defines still.
{{template "schema/samples_rollup_mv.sql" .}}
