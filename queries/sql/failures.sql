-- Failed requests per group, origin and error code (never part of the
-- percentiles unless failures are included).
SELECT grp, origin, err, count() AS n
FROM
(
    SELECT {{.Group}} AS grp, toString(want) AS origin, error AS err
    FROM samples
    PREWHERE error != ''
    WHERE time >= toDateTime(@since, 'UTC') AND time < toDateTime(@until, 'UTC')
      AND (@site = '' OR site = @site)
      AND (@include_warmup = 1 OR phase = 'parallel')
      AND (@include_bots = 1 OR bot = 0)
      AND {{template "design" .}}
)
GROUP BY grp, origin, err
ORDER BY grp, n DESC, origin, err
