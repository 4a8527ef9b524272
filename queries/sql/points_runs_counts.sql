-- Exact run counts for points_rollup.sql, whose HyperLogLog states the
-- engines hash differently (uniqHLL12 of 53 243 runs: 54 327 on 18.16,
-- 52 664 on 26.7). From the runs table, one row per run (store migration
-- 0039): per group × batch order × outcome, the runs holding one of the
-- selection's requests of that outcome, and with outcome '' the runs
-- holding any. Go derives the totals over orders (a run has one batch
-- order, so they are sums) and the grand total (a run is in one group).
-- The KEEP placeholder masks the requests the selection keeps (Options.keepSQL).
-- Parameters: those of runsSelectionSQL (runsArgs).
SELECT grp, ord, oc, count() AS n_runs
FROM
(
    SELECT
        /*GROUP*/ AS grp,
        toString(param_order) AS ord,
        arrayReduce('groupUniqArray', arrayFilter((o, k) -> k = 1, arrayMap(o -> toString(o), outcomes), /*KEEP*/)) AS kept_outcomes,
        arrayJoin(if(empty(kept_outcomes), kept_outcomes, arrayPushFront(kept_outcomes, ''))) AS oc
    FROM runs
    WHERE /*RUNS SELECTION*/
)
GROUP BY grp, ord, oc
ORDER BY grp, ord, oc
