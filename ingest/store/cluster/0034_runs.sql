-- runs over runs_local with the runs' failed requests (0032).
{{template "runs over the shards" .}}
