-- Exact run counts for points_rollup.sql, whose HyperLogLog states the
-- engines hash differently (uniqHLL12 of 53 243 runs: 54 327 on 18.16,
-- 52 664 on 26.7). From the runs table, one row per run (store migration
-- 0039): per group × batch order, the runs holding any of the selection's
-- requests (n_any) and, per outcome, the runs holding one of that outcome
-- (/*OUTCOME COUNTS*/: countIf(has(kept, code)) for each outcome code of
-- the outcomes column's Enum8, in Go's order, runCountOutcomes). Go
-- derives the totals over orders (a run has one batch order, so they are
-- sums) and the grand total (a run is in one group). has() on the codes
-- took 90–130 ms at 10 M samples on 18.16 where the distinct outcomes of
-- each run (arrayReduce groupUniqArray over strings) took 230–420 ms.
-- /*KEPT*/ is the run's outcomes the selection keeps (Options.keptSQL).
-- By the trend's window as well (/*BUCKET*/, as in trend.sql): Go sums the
-- windows for the point estimates, and the trend from the rollup takes
-- its exact runs per window from here instead of a pass of its own.
-- Parameters: those of runsSelectionSQL (runsArgs).
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
