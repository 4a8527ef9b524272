-- A quantile grid from the runs table (store migration 0039), for the
-- selections it holds (query.RunsTableSelects), as quantiles_rollup.sql
-- from the rollup: one row per run instead of every sample, and each
-- cell's runs counted without uniqExact over run ids. One row per window ×
-- group × batch order, the H2 and H3 cells side by side, at the levels of
-- .GridLevels: the trend's by hour or day (.Window over time), the
-- curves' over the whole window (.OneWindow), which is cheaper than
-- curves.sql over the samples. A cell's runs are those with a kept
-- request of its protocol (a curve is drawn only with runs). .KeptDurations
-- and .Kept are each run's durations and outcomes the selection keeps (as
-- in points_runs.sql).
SELECT
    toUInt32({{.Window "time"}}) AS t,
    grp,
    ord,
    countIf(notEmpty(d_h2)) AS runs_h2,
    quantilesTDigestArray({{.GridLevels}})(d_h2) AS q_h2,
    countIf(notEmpty(d_h3)) AS runs_h3,
    quantilesTDigestArray({{.GridLevels}})(d_h3) AS q_h3
FROM
(
    SELECT
        time,
        {{.Group}} AS grp,
        toString(param_order) AS ord,
        {{.KeptDurations}} AS ds,
        {{.Kept}} AS os,
        arrayFilter((d, o) -> o = 'h2', ds, os) AS d_h2,
        arrayFilter((d, o) -> o = 'h3', ds, os) AS d_h3
    FROM runs
    WHERE {{template "runs selection" .}}
)
GROUP BY t, grp, ord
ORDER BY t, grp, ord
