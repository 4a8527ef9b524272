-- The same as points_rollup.sql for a window of whole hours: the rollup alone.
-- Parameters: first hour, end of hours, site twice.
SELECT
    grp,
    oc,
    uniqHLL12Merge(runs_state) AS n_runs,
    countMerge(samples_state) AS n_samples,
    quantilesTDigestMerge(/*LEVELS*/)(duration_state) AS q
FROM
(
    SELECT /*GROUP*/ AS grp, toString(outcome) AS oc,
           runs AS runs_state, samples AS samples_state, duration AS duration_state
    FROM samples_hourly
    WHERE hour >= toDateTime(?, 'UTC') AND hour < toDateTime(?, 'UTC')
      AND (? = '' OR site = ?)
)
GROUP BY grp, oc WITH ROLLUP
ORDER BY grp, oc
