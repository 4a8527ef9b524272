-- runs over runs_local with the runs' samples (0025).
{{template "schema/distributed.sql" (.Over "runs" "cityHash64(toString(run_id))")}}
