-- Exact run counts for points_rollup.sql, whose HyperLogLog states the
-- engines hash differently, so their estimates differ between versions.
-- From the runs table, one row per run (store migration 0039): per group
-- × batch order, the runs holding any of the selection's requests (n_any)
-- and, per outcome, the runs holding one of that outcome (.OutcomeCounts:
-- countIf(has(kept, code)) for each outcome code of the outcomes column's
-- Enum8, in Go's order, query.RunCountOutcomes), which is cheaper than each
-- run's distinct outcomes as strings. Go derives the totals over orders
-- (a run has one batch order, so they are sums) and the grand total (a
-- run is in one group). .Kept is the run's outcomes the selection keeps.
-- By the trend's window as well (.Window, as in trend.sql): Go sums the
-- windows for the point estimates, and the trend from the rollup takes
-- its exact runs per window from here instead of a pass of its own.
SELECT t, grp, ord, count() AS n_any, {{.OutcomeCounts}}
FROM
(
    SELECT
        toUInt32({{.Window "time"}}) AS t,
        {{.Group}} AS grp,
        toString(param_order) AS ord,
        {{.Kept}} AS kept
    FROM runs
    WHERE {{template "runs selection" .}}
)
WHERE notEmpty(kept)
GROUP BY t, grp, ord
ORDER BY t, grp, ord
