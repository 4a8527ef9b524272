-- Point estimates per group × outcome from raw samples; WITH ROLLUP adds
-- a row per group (outcome '') with its totals and a grand total (group '').
-- /*GROUP*/ is replaced by a fixed expression chosen in Go (groupExpr),
-- never by user input. Parameters: since, until (unix seconds), site twice,
-- include_warmup, include_failed, include_bots (0/1).
SELECT
    grp,
    multiIf(want = 'h2' AND got = 'h2', 'h2',
            want = 'h3' AND got = 'h3', 'h3',
            want = 'h3' AND (got = 'h2' OR got = 'h1'), 'wanted_h3_got_h2',
            'other') AS outcome,
    uniq(run_id) AS n_runs,
    count() AS n_samples,
    quantilesTDigest(0.5, 0.75, 0.9, 0.95, 0.99)(duration_ms) AS q
FROM
(
    SELECT /*GROUP*/ AS grp, want, got, run_id, duration_ms
    FROM samples
    WHERE time >= toDateTime(?, 'UTC') AND time < toDateTime(?, 'UTC')
      AND (? = '' OR site = ?)
      AND (? = 1 OR phase = 'parallel')
      AND (? = 1 OR error = '')
      AND (? = 1 OR bot = 0)
)
GROUP BY grp, outcome WITH ROLLUP
ORDER BY grp, outcome
