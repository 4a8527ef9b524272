-- timeline_raw.sql from the runs table: each run's parallel requests are
-- elements of its arrays (store migration 0039), so the window's runs are
-- read instead of its samples. For raw reports whose selection the runs
-- table holds: parallel batches of browser runs, a grouping it has.
-- Parameters: since, until, site twice, include_bots, include_excluded,
-- the exclusion bits that count, include_failed.
SELECT
    toStartOfHour(time) AS h,
    toString(o) AS oc,
    count() AS n
FROM runs
ARRAY JOIN outcomes AS o, errors AS e
WHERE time >= toDateTime(?, 'UTC') AND time < toDateTime(?, 'UTC')
  AND (? = '' OR site = ?)
  AND (? = 1 OR bot = 0)
  AND (? = 1 OR bitAnd(exclusions, ?) = 0)
  AND /*DESIGN*/
  AND (e = '' OR ? = 1)
GROUP BY h, oc
ORDER BY h, oc
