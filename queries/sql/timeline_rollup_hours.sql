-- The same as timeline_rollup.sql for a window of whole hours: the rollup alone.
-- Parameters: first hour, end of hours, site twice.
SELECT
    h,
    oc,
    countMerge(samples_state) AS n
FROM
(
    SELECT hour AS h, toString(outcome) AS oc, samples AS samples_state
    FROM samples_hourly
    WHERE hour >= toDateTime(?, 'UTC') AND hour < toDateTime(?, 'UTC')
      AND (? = '' OR site = ?)
)
GROUP BY h, oc
ORDER BY h, oc
