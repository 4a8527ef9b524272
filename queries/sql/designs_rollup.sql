-- designs.sql for reports that are not from raw rows: the same exact run
-- counts per design, from run_counts (store migration 0051: every run of
-- the runs table counted by hour, site, region and design) for the
-- window's whole hours, its twin for the edges' five minutes, and in the
-- .Edges block from the runs table for the minutes left, as designs.sql
-- reads it. A few thousand
-- rows a day where the runs table holds a row a run; the designs come
-- first in every report, so their time is the report's.
SELECT param_parallel, param_bytes, param_warmup, beacon_major, param_extra, sum(n) AS n_runs
FROM
(
    {{- range $i, $r := .Rollups "run_counts"}}{{if $i}}
    UNION ALL{{end}}
    SELECT param_parallel, param_bytes, param_warmup, beacon_major, param_extra, runs AS n
    FROM {{.Table}}
    WHERE {{template "rollup slots" .}}
      AND {{template "place" .}}
    {{- end}}
    {{- if .Edges}}
    UNION ALL
    SELECT param_parallel, param_bytes, param_warmup, beacon_major, param_extra, toUInt64(1) AS n
    FROM runs
    PREWHERE {{template "edge hours" .}}
    WHERE {{template "place" .}}
    {{- end}}
)
GROUP BY param_parallel, param_bytes, param_warmup, beacon_major, param_extra
ORDER BY n_runs DESC, param_parallel, param_bytes, param_warmup, beacon_major, param_extra
