-- The runs of excluded.sql from the runs table: one row per run.
    SELECT /*GROUP*/ AS grp, exclusions AS x, h3n, h3ok, cold_h2, cold_h3,
           arrayExists(w -> w = 'h2', wants) AS to_h2,
           arrayExists(w -> w = 'h2', failed_wants) AS failed_h2,
           arrayExists(w -> w = 'h3', failed_wants) AS failed_h3
    FROM runs
    WHERE time >= toDateTime(?, 'UTC') AND time < toDateTime(?, 'UTC')
      AND (? = '' OR site = ?)
      AND /*DESIGN*/
