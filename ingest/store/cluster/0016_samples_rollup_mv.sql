-- The rollup's view (0005) on browser rows only, as migrations/0034: the
-- view schema/samples_rollup_mv.sql defines still.
{{template "schema/samples_rollup_mv.sql" .}}
