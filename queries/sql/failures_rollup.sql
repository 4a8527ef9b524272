-- failures_table.sql for reports from the rollup: the same failed parallel
-- requests per group, origin and error code, from failure_counts (store
-- migration 0053: the runs table's failures counted by hour, region,
-- design, bot, origin and code, a few hundred rows a day) for the window's
-- whole hours, and in the .Edges block from the runs table for the
-- partial hours at its edges, as failures_table.sql reads it.
SELECT grp, origin, err, sum(n) AS n
FROM
(
    SELECT {{.Group}} AS grp, toString(want) AS origin, error AS err, failures AS n
    FROM failure_counts
    WHERE {{template "whole hours" .}}
      AND (@include_bots = 1 OR bot = 0)
      AND {{template "design" .}}
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
