-- Exact run counts for the trend from quantiles_rollup.sql, from the runs table (one row per
-- run, as points_runs_counts.sql): per window × group × batch order, the
-- runs holding a kept H2 request and those holding a kept H3 one — the
-- outcomes column's Enum8 codes of h2 and h3 (store.Outcome, filled in by Go; migration
-- 0039), looked up with has(). /*BUCKET*/ and /*KEPT*/ as in
-- quantiles_runs.sql and points_runs_counts.sql. Parameters: those of
-- runsSelectionSQL (runsArgs).
SELECT
    toUInt32(/*BUCKET*/) AS t,
    grp,
    ord,
    countIf(has(kept, /*OUTCOME H2*/)) AS runs_h2,
    countIf(has(kept, /*OUTCOME H3*/)) AS runs_h3
FROM
(
    SELECT time, /*GROUP*/ AS grp, toString(param_order) AS ord, /*KEPT*/ AS kept
    FROM runs
    WHERE /*RUNS SELECTION*/
)
GROUP BY t, grp, ord
