-- The same as points_rollup.sql for a window of whole hours: the rollup alone.
-- Parameters: first hour, end of hours, site twice.
SELECT
    grp,
    multiIf(want = 'h2' AND got = 'h2', 'h2',
            want = 'h3' AND got = 'h3', 'h3',
            want = 'h3' AND (got = 'h2' OR got = 'h1'), 'wanted_h3_got_h2',
            'other') AS outcome,
    uniqHLL12Merge(runs_state) AS n_runs,
    countMerge(samples_state) AS n_samples,
    quantilesTDigestMerge(0.5, 0.75, 0.9, 0.95, 0.99)(duration_state) AS q
FROM
(
    SELECT /*GROUP*/ AS grp, want, got,
           runs AS runs_state, samples AS samples_state, duration AS duration_state
    FROM samples_hourly
    WHERE hour >= toDateTime(?, 'UTC') AND hour < toDateTime(?, 'UTC')
      AND (? = '' OR site = ?)
)
GROUP BY grp, outcome WITH ROLLUP
ORDER BY grp, outcome
