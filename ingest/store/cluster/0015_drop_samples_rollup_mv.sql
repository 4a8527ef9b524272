-- The rollup's view is rebuilt to keep agent rows out (0016).
{{template "migrations/0033_drop_samples_rollup_mv.sql" .}}
