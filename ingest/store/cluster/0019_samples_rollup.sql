-- samples_rollup over samples_rollup_local with its source (0017).
{{template "schema/distributed.sql" (.Over "samples_rollup" "")}}
