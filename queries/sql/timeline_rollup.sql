-- Samples per hour and outcome for the default selection: whole hours from
-- the rollup, the partial edge hours from raw rows (parameters as in
-- points_rollup.sql).
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
    UNION ALL
    SELECT toStartOfHour(time) AS h, want, got, countState() AS samples_state
    FROM samples
    WHERE ((time >= toDateTime(?, 'UTC') AND time < toDateTime(?, 'UTC'))
        OR (time >= toDateTime(?, 'UTC') AND time < toDateTime(?, 'UTC')))
      AND (? = '' OR site = ?)
      AND phase = 'parallel' AND error = '' AND bot = 0
    GROUP BY h, want, got
)
GROUP BY h, outcome
ORDER BY h, outcome
