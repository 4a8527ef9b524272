-- failures.sql from the runs table, which holds each run's parallel
-- requests with their origin and error code (store migration 0039): one
-- row per run, and only the runs with a failure past PREWHERE, instead of
-- every sample of the window. For reports whose selection the runs table
-- holds (parallel batches of browser runs, a grouping it has).
-- Parameters: since, until, site twice, include_bots.
SELECT grp, origin, err, count() AS n
FROM
(
    SELECT /*GROUP*/ AS grp, toString(w) AS origin, e AS err
    FROM runs
    ARRAY JOIN wants AS w, errors AS e
    PREWHERE arrayExists(x -> x != '', errors)
    WHERE time >= toDateTime(?, 'UTC') AND time < toDateTime(?, 'UTC')
      AND (? = '' OR site = ?)
      AND (? = 1 OR bot = 0)
      AND /*DESIGN*/
      AND e != ''
)
GROUP BY grp, origin, err
ORDER BY grp, n DESC, origin, err
