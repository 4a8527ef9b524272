-- Samples per hour and outcome from raw rows.
-- Parameters: since, until, site twice, include_warmup, include_failed,
-- include_bots.
SELECT
    toStartOfHour(time) AS h,
    multiIf(want = 'h2' AND got = 'h2', 'h2',
            want = 'h3' AND got = 'h3', 'h3',
            want = 'h3' AND (got = 'h2' OR got = 'h1'), 'wanted_h3_got_h2',
            'other') AS outcome,
    count() AS n
FROM samples
WHERE time >= toDateTime(?, 'UTC') AND time < toDateTime(?, 'UTC')
  AND (? = '' OR site = ?)
  AND (? = 1 OR phase = 'parallel')
  AND (? = 1 OR error = '')
  AND (? = 1 OR bot = 0)
GROUP BY h, outcome
ORDER BY h, outcome
