-- The runs of excluded.sql from the samples: one row per group and run.
    SELECT min(time) AS run_time, {{.Group}} AS grp, run_id, any(exclusions) AS x,
           countIf(want = 'h3') AS h3n,
           countIf(want = 'h3' AND outcome = 'h3' AND error = '') AS h3ok,
           countIf(cold = 1 AND want = 'h2') AS cold_h2,
           countIf(cold = 1 AND want = 'h3') AS cold_h3,
           countIf(want = 'h2') > 0 AS to_h2,
           countIf(want = 'h2' AND error != '') > 0 AS failed_h2,
           countIf(want = 'h3' AND error != '') > 0 AS failed_h3
    FROM samples
    WHERE time >= toDateTime(@since, 'UTC') AND time < toDateTime(@until, 'UTC')
      AND (@site = '' OR site = @site)
      AND phase = 'parallel'
      AND {{template "design" .}}
    GROUP BY grp, run_id
