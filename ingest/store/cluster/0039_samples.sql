-- samples over samples_local with the script's errors (0037).
{{template "samples over the shards" .}}
