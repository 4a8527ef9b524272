-- failures.sql from the runs table, which holds each run's failed parallel
-- requests apart, their origin and error code (store migration 0044): one
-- row per run, and for most runs two empty arrays, instead of every sample
-- of the window or every run's error codes. For reports whose selection
-- the runs table holds (parallel batches of browser runs, a grouping it
-- has).
SELECT grp, origin, err, count() AS n
FROM
(
    SELECT {{.Group}} AS grp, toString(w) AS origin, e AS err
    FROM runs
    ARRAY JOIN failed_wants AS w, failed_errors AS e
    WHERE time >= toDateTime(@since, 'UTC') AND time < toDateTime(@until, 'UTC')
      AND (@site = '' OR site = @site)
      AND (@include_bots = 1 OR bot = 0)
      AND {{template "design" .}}
)
GROUP BY grp, origin, err
ORDER BY grp, n DESC, origin, err
