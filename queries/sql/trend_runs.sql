-- trend.sql from the runs table (store migration 0039), for the selections
-- it holds (Options.runsTableSelects): one row per run instead of every
-- sample, and each cell's runs counted without uniqExact over run ids. One
-- row per window × group × batch order, the H2 and H3 cells side by side.
-- /*BUCKET*/, /*TREND LEVELS*/ and /*KEEP*/ as in trend.sql and
-- points_runs.sql. Parameters: those of runsSelectionSQL (runsArgs).
SELECT
    toUInt32(/*BUCKET*/) AS t,
    grp,
    ord,
    countIf(notEmpty(d_h2)) AS runs_h2,
    quantilesTDigestArray(/*TREND LEVELS*/)(d_h2) AS q_h2,
    countIf(notEmpty(d_h3)) AS runs_h3,
    quantilesTDigestArray(/*TREND LEVELS*/)(d_h3) AS q_h3
FROM
(
    SELECT
        time,
        /*GROUP*/ AS grp,
        toString(param_order) AS ord,
        /*KEEP*/ AS keep,
        arrayFilter((d, o, k) -> k AND o = 'h2', durations, outcomes, keep) AS d_h2,
        arrayFilter((d, o, k) -> k AND o = 'h3', durations, outcomes, keep) AS d_h3
    FROM runs
    WHERE /*RUNS SELECTION*/
)
GROUP BY t, grp, ord
ORDER BY t, grp, ord
