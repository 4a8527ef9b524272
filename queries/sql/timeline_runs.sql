-- timeline_raw.sql from the runs table: each run's parallel requests are
-- elements of its arrays (store migration 0039), so the window's runs are
-- read instead of its samples, counted per hour and outcome side by side
-- (less work than an ARRAY JOIN of every request) and turned into
-- timeline_raw.sql's rows. For raw reports whose selection the runs table
-- holds: parallel batches of browser runs, a grouping it has. A failed
-- request counts only when failures are included, as in timeline_raw.sql.
SELECT h, c.1 AS oc, c.2 AS n
FROM
(
    SELECT
        toStartOfHour(time) AS h,
        sum(arrayCount((o, e) -> o = 'h2' AND (e = '' OR @include_failed = 1), outcomes, errors)) AS n_h2,
        sum(arrayCount((o, e) -> o = 'h3' AND (e = '' OR @include_failed = 1), outcomes, errors)) AS n_h3,
        sum(arrayCount((o, e) -> o = 'wanted_h3_got_h2' AND (e = '' OR @include_failed = 1), outcomes, errors)) AS n_fb,
        sum(arrayCount((o, e) -> o = 'other' AND (e = '' OR @include_failed = 1), outcomes, errors)) AS n_other
    FROM runs
    WHERE {{template "runs selection" .}}
    GROUP BY h
)
ARRAY JOIN [('h2', n_h2), ('h3', n_h3), ('wanted_h3_got_h2', n_fb), ('other', n_other)] AS c
WHERE n > 0
ORDER BY h, oc
