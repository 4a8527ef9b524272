-- itt_raw.sql from the runs table, which holds each run's parallel requests
-- as arrays with their origin and error code (store migration 0039): one
-- row per run instead of every sample of the window, and exact run counts.
-- For groupings the runs table has (not by collector, a per-sample column;
-- not the agent's runs). Each origin's requests are aggregated side by side,
-- a failure at the script's timeout, and turned into itt_raw.sql's rows (a
-- group × origin each) at the end.
SELECT
    grp,
    o.1 AS sent_to,
    o.2 AS n_runs,
    o.3 AS n_samples,
    o.4 AS n_failed,
    o.5 AS n_failed_runs,
    o.6 AS q
FROM
(
    SELECT
        grp,
        countIf(notEmpty(d_h2)) AS runs_h2, sum(length(d_h2)) AS n_h2, sum(f_h2) AS failed_h2,
        countIf(f_h2 > 0) AS failed_runs_h2, quantilesTDigestArray({{.Levels}})(d_h2) AS q_h2,
        countIf(notEmpty(d_h3)) AS runs_h3, sum(length(d_h3)) AS n_h3, sum(f_h3) AS failed_h3,
        countIf(f_h3 > 0) AS failed_runs_h3, quantilesTDigestArray({{.Levels}})(d_h3) AS q_h3
    FROM
    (
        SELECT
            {{.Group}} AS grp,
            arrayMap((d, e) -> if(e = '', d, toFloat32({{.TimeoutMS}})), durations, errors) AS ds,
            arrayFilter((d, w) -> w = 'h2', ds, wants) AS d_h2,
            arrayFilter((d, w) -> w = 'h3', ds, wants) AS d_h3,
            arrayCount((w, e) -> w = 'h2' AND e != '', wants, errors) AS f_h2,
            arrayCount((w, e) -> w = 'h3' AND e != '', wants, errors) AS f_h3
        FROM runs
        WHERE time >= toDateTime(@since, 'UTC') AND time < toDateTime(@until, 'UTC')
          AND (@site = '' OR site = @site)
          AND bitAnd(exclusions, {{.BotBit}}) = 0
          AND {{template "design" .}}
    )
    GROUP BY grp
)
ARRAY JOIN [('h2', runs_h2, n_h2, failed_h2, failed_runs_h2, q_h2),
            ('h3', runs_h3, n_h3, failed_h3, failed_runs_h3, q_h3)] AS o
WHERE n_samples > 0
ORDER BY grp, sent_to
