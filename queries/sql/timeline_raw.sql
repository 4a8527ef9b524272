-- Samples per hour and outcome from raw rows.
-- Parameters: since, until, site twice, include_warmup, include_failed,
-- include_bots, include_excluded, the exclusion bits that count.
SELECT
    toStartOfHour(time) AS h,
    toString(outcome) AS oc,
    count() AS n
FROM samples
WHERE time >= toDateTime(?, 'UTC') AND time < toDateTime(?, 'UTC')
  AND (? = '' OR site = ?)
  AND (? = 1 OR phase = 'parallel')
  AND (? = 1 OR error = '')
  AND (? = 1 OR bot = 0)
  AND (? = 1 OR bitAnd(exclusions, ?) = 0)
  AND /*DESIGN*/
GROUP BY h, oc
ORDER BY h, oc
