-- The rollup holds browser rows only (0016); migrations/0035.
{{template "migrations/0035_samples_rollup_source.sql" .}}
