-- runs over runs_local with its source (0022).
{{template "schema/distributed.sql" (.Over "runs" "cityHash64(toString(run_id))")}}
