-- The same as timeline_rollup.sql for a window of whole hours: the rollup alone.
-- Parameters: first hour, end of hours, site twice.
SELECT
    h,
    multiIf(want = 'h2' AND got = 'h2', 'h2',
            want = 'h3' AND got = 'h3', 'h3',
            want = 'h3' AND (got = 'h2' OR got = 'h1'), 'wanted_h3_got_h2',
            'other') AS outcome,
    countMerge(samples_state) AS n
FROM
(
    SELECT hour AS h, want, got, samples AS samples_state
    FROM samples_hourly
    WHERE hour >= toDateTime(?, 'UTC') AND hour < toDateTime(?, 'UTC')
      AND (? = '' OR site = ?)
)
GROUP BY h, outcome
ORDER BY h, outcome
