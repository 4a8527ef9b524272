-- The runs of excluded.sql from the runs table: one row per run. The
-- origins are the Enum8 values of wants and failed_wants (store migrations
-- 0039 and 0044: 'h2' = 2, 'h3' = 3), looked up with has(), which 18.16
-- allows only with a number there: arrayExists(w -> w = 'h2', …) gave the
-- same counts but took ten times as long on 26.x (52 against 5 ms over
-- 60 000 runs; 10 against 9 ms on 18.16).
    SELECT time AS run_time, {{.Group}} AS grp, exclusions AS x, h3n, h3ok, cold_h2, cold_h3,
           has(wants, 2) AS to_h2,
           has(failed_wants, 2) AS failed_h2,
           has(failed_wants, 3) AS failed_h3
    FROM runs
    WHERE time >= toDateTime(@since, 'UTC') AND time < toDateTime(@until, 'UTC')
      AND (@site = '' OR site = @site)
      AND {{template "design" .}}
