-- samples over samples_local with its new columns (0011, 0012).
{{template "schema/distributed.sql" (.Over "samples" "cityHash64(toString(run_id))")}}
