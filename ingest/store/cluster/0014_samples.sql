-- samples over samples_local with its new columns (0011, 0012).
{{template "samples over the shards" .}}
