-- failures.sql from the runs table, which holds each run's failed parallel
-- requests apart, their origin and error code (store migration 0044): one
-- row per run, and for most runs two empty arrays, instead of every sample
-- of the window or every run's error codes. For reports whose selection
-- the runs table holds (parallel batches of browser runs, a grouping it
-- has). Parameters: since, until, site twice, include_bots.
SELECT grp, origin, err, count() AS n
FROM
(
    SELECT /*GROUP*/ AS grp, toString(w) AS origin, e AS err
    FROM runs
    ARRAY JOIN failed_wants AS w, failed_errors AS e
    WHERE time >= toDateTime(?, 'UTC') AND time < toDateTime(?, 'UTC')
      AND (? = '' OR site = ?)
      AND (? = 1 OR bot = 0)
      AND /*DESIGN*/
)
GROUP BY grp, origin, err
ORDER BY grp, n DESC, origin, err
