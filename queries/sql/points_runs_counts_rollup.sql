-- points_runs_counts.sql for reports from the rollup: the same exact run
-- counts, per trend window × group × batch order, from run_counts (store
-- migration 0051: runs counted by hour and the keys these reports select
-- by, a few thousand rows a day) for the window's whole hours, its twin for
-- the edges' five minutes, and in the .Edges block from the runs table for
-- the minutes left, so the window is exact. The rollup's selection keeps every request of a
-- run (no failures, no excluded runs: .Kept is the outcomes column),
-- which is what run_counts counted: the runs with a parallel request, and
-- per outcome those with one of it, in Go's order (query.RunCountOutcomes). The
-- trend's window is taken over the tables' hour column.
SELECT t, grp, ord, sum(n) AS n_any, sum(h2) AS n_h2, sum(h3) AS n_h3, sum(wanted) AS n_wanted_h3_got_h2, sum(other) AS n_other
FROM
(
    {{- range $i, $r := .Rollups "run_counts"}}{{if $i}}
    UNION ALL{{end}}
    SELECT toUInt32({{.Window "hour"}}) AS t, {{.Group}} AS grp, toString(param_order) AS ord, runs AS n,
           runs_h2 AS h2, runs_h3 AS h3, runs_wanted_h3_got_h2 AS wanted, runs_other AS other
    FROM {{.Table}}
    WHERE {{template "rollup slots" .}}
      AND (@include_bots = 1 OR bot = 0)
      AND (@include_excluded = 1 OR bitAnd(exclusions, @exclusions) = 0)
      AND {{template "design" .}}
    {{- end}}
    {{- if .Edges}}
    UNION ALL
    SELECT toUInt32({{.Window "time"}}) AS t, {{.Group}} AS grp, toString(param_order) AS ord,
           toUInt64(1) AS n, toUInt64(has(outcomes, 1)) AS h2, toUInt64(has(outcomes, 2)) AS h3,
           toUInt64(has(outcomes, 3)) AS wanted, toUInt64(has(outcomes, 0)) AS other
    FROM runs
    PREWHERE {{template "edge hours" .}}
    WHERE (@include_bots = 1 OR bot = 0)
      AND (@include_excluded = 1 OR bitAnd(exclusions, @exclusions) = 0)
      AND {{template "design" .}}
    {{- end}}
)
GROUP BY t, grp, ord
ORDER BY t, grp, ord
