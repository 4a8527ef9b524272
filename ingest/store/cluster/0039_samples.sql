-- samples over samples_local with the script's errors (0037).
{{template "schema/distributed.sql" (.Over "samples" "cityHash64(toString(run_id))")}}
