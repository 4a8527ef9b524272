-- The runs of excluded.sql from the runs table: one row per run.
    SELECT /*GROUP*/ AS grp, exclusions AS x, h3n, h3ok, cold_h2, cold_h3
    FROM runs
    WHERE time >= toDateTime(?, 'UTC') AND time < toDateTime(?, 'UTC')
      AND (? = '' OR site = ?)
      AND /*DESIGN*/
