-- runs over runs_local with the runs' samples (0025).
{{template "runs over the shards" .}}
