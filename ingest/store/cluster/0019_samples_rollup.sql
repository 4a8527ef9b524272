-- samples_rollup over samples_rollup_local with its source (0017).
{{template "samples_rollup over the shards" .}}
