-- curves.sql from the runs table (store migration 0039), as points_runs.sql
-- reads points_raw.sql's figures: one row per run instead of every sample,
-- for the selections the runs table holds (Options.runsTableSelects).
-- Half the time of curves.sql at 10 M samples on 18.16 (0.45 against
-- 0.95 s, measured beside other work). One row per group × batch order,
-- with the H2 and H3 curves side by side and the runs of each (a curve
-- is drawn only with runs). /*KEEP*/ masks each run's requests the
-- selection keeps (Options.keepSQL). Parameters: those of runsSelectionSQL
-- (runsArgs).
SELECT
    grp,
    ord,
    countIf(notEmpty(d_h2)) AS runs_h2,
    quantilesTDigestArray(/*CURVE LEVELS*/)(d_h2) AS q_h2,
    countIf(notEmpty(d_h3)) AS runs_h3,
    quantilesTDigestArray(/*CURVE LEVELS*/)(d_h3) AS q_h3
FROM
(
    SELECT
        /*GROUP*/ AS grp,
        toString(param_order) AS ord,
        /*KEEP*/ AS keep,
        arrayFilter((d, o, k) -> k AND o = 'h2', durations, outcomes, keep) AS d_h2,
        arrayFilter((d, o, k) -> k AND o = 'h3', durations, outcomes, keep) AS d_h3
    FROM runs
    WHERE /*RUNS SELECTION*/
)
GROUP BY grp, ord
ORDER BY grp, ord
