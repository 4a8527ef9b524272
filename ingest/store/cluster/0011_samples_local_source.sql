-- Who measured the sample (migrations/0031), on every shard's table; 0014
-- adds it to the Distributed table.
{{template "migrations/0031_samples_source.sql" .}}
