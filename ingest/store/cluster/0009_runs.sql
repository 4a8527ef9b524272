-- The runs as reports read them, sharded by run id as samples are.
{{template "schema/distributed.sql" (.Over "runs" "cityHash64(toString(run_id))")}}
