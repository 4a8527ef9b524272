-- failures_table.sql for reports from the rollup: the same failed parallel
-- requests per group, origin and error code, from failure_counts (store
-- migration 0053: the runs table's failures counted by hour, region,
-- design, bot, origin and code, a few hundred rows a day) for the window's
-- whole hours, its twin for the edges' five minutes, and in the .Edges
-- block from the runs table for the minutes left, as failures_table.sql
-- reads it.
SELECT grp, origin, err, sum(n) AS n
FROM
(
    {{- range $i, $r := .Rollups "failure_counts"}}{{if $i}}
    UNION ALL{{end}}
    SELECT {{.Group}} AS grp, toString(want) AS origin, error AS err, failures AS n
    FROM {{.Table}}
    WHERE {{template "rollup slots" .}}
      AND (@include_bots = 1 OR bot = 0)
      AND {{template "design" .}}
    {{- end}}
    {{- if .Edges}}
    UNION ALL
    SELECT {{.Group}} AS grp, toString(w) AS origin, e AS err, toUInt64(1) AS n
    FROM runs
    ARRAY JOIN failed_wants AS w, failed_errors AS e
    PREWHERE {{template "edge hours" .}}
    WHERE (@include_bots = 1 OR bot = 0)
      AND {{template "design" .}}
    {{- end}}
)
GROUP BY grp, origin, err
ORDER BY grp, n DESC, origin, err
