-- The script's own errors by stage (migrations/0047), on every shard's
-- table; 0039 adds them to the Distributed table.
{{template "migrations/0047_samples_script_errors.sql" .}}
