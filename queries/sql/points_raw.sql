-- Point estimates per group × outcome × batch order from raw samples; WITH
-- ROLLUP adds the totals of every group × outcome (order ''), of every group
-- (outcome '') and a grand total (group '').
-- /*GROUP*/ is replaced by a fixed expression chosen in Go (groupExpr),
-- never by user input. Parameters: since, until (unix seconds), site twice,
-- include_warmup, include_failed, include_bots, include_excluded (0/1), the
-- exclusion bits that count (all but bot when bots are included).
SELECT
    grp,
    oc,
    ord,
    uniq(run_id) AS n_runs,
    count() AS n_samples,
    quantilesTDigest({{.Levels}})(duration_ms) AS q
FROM
(
    SELECT {{.Group}} AS grp, toString(outcome) AS oc, toString(param_order) AS ord, run_id, duration_ms
    FROM samples
    WHERE {{template "selection" .}}
)
GROUP BY grp, oc, ord WITH ROLLUP
ORDER BY grp, oc, ord
