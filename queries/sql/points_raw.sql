-- Point estimates per group × outcome × batch order from raw samples; WITH
-- ROLLUP adds the totals of every group × outcome (order ''), of every group
-- (outcome '') and a grand total (group '').
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
