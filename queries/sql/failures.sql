-- Failed requests per group, origin and error code (never part of the
-- percentiles unless failures are included).
-- Parameters: since, until, site twice, include_warmup, include_bots.
SELECT grp, origin, err, count() AS n
FROM
(
    SELECT /*GROUP*/ AS grp, toString(want) AS origin, error AS err
    FROM samples
    PREWHERE error != ''
    WHERE time >= toDateTime(?, 'UTC') AND time < toDateTime(?, 'UTC')
      AND (? = '' OR site = ?)
      AND (? = 1 OR phase = 'parallel')
      AND (? = 1 OR bot = 0)
      AND /*DESIGN*/
)
GROUP BY grp, origin, err
ORDER BY grp, n DESC, origin, err
