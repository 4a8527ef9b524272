-- The runs of excluded.sql from the runs table: one row per run. The
-- origins are the Enum8 values of wants and failed_wants (store migrations
-- 0039 and 0044: 'h2' = 2, 'h3' = 3), looked up with has(), which 18.16
-- allows only with a number there; arrayExists over the names gives the
-- same counts but is much slower on 26.x.
    SELECT time AS run_time, {{.Group}} AS grp, exclusions AS x, h3n, h3ok, cold_h2, cold_h3,
           has(wants, 2) AS to_h2,
           has(failed_wants, 2) AS failed_h2,
           has(failed_wants, 3) AS failed_h3
    FROM runs
    WHERE time >= toDateTime(@since, 'UTC') AND time < toDateTime(@until, 'UTC')
      AND (@site = '' OR site = @site)
      AND {{template "design" .}}
