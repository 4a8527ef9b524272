-- runs over runs_local with the runs' failed requests (0032).
{{template "schema/distributed.sql" (.Over "runs" "cityHash64(toString(run_id))")}}
