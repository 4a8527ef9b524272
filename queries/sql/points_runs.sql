-- points_raw.sql from the runs table, which holds each run's parallel
-- requests as arrays (store migration 0039): one row per run instead of
-- every sample of the window, and exact run counts (a run counts in an
-- outcome when it holds one of its selected requests) instead of uniq's
-- estimate. For raw reports whose selection the runs table holds:
-- parallel batches of browser runs, a grouping it has. One row per group
-- × batch order, with each outcome's runs, samples and percentiles side
-- by side (h2, h3, the fallback, other), and the runs and samples of all
-- outcomes together; Go derives the totals points_raw.sql gets from WITH
-- ROLLUP (a run has one batch order, so an outcome's runs over both orders
-- are a sum). .KeptDurations and .Kept are each run's durations and
-- outcomes the selection keeps: the arrays themselves unless a run's
-- failed requests must be left out, sparing every run a mask over them
-- that the filters below would take in.
SELECT
    grp,
    ord,
    countIf(notEmpty(d_h2)) AS runs_h2, sum(length(d_h2)) AS n_h2,
    quantilesTDigestArray({{.Levels}})(d_h2) AS q_h2,
    countIf(notEmpty(d_h3)) AS runs_h3, sum(length(d_h3)) AS n_h3,
    quantilesTDigestArray({{.Levels}})(d_h3) AS q_h3,
    countIf(notEmpty(d_fb)) AS runs_fb, sum(length(d_fb)) AS n_fb,
    quantilesTDigestArray({{.Levels}})(d_fb) AS q_fb,
    countIf(notEmpty(d_other)) AS runs_other, sum(length(d_other)) AS n_other,
    quantilesTDigestArray({{.Levels}})(d_other) AS q_other,
    countIf(kept > 0) AS runs_all, sum(kept) AS n_all
FROM
(
    SELECT
        {{.Group}} AS grp,
        toString(param_order) AS ord,
        {{.KeptDurations}} AS ds,
        {{.Kept}} AS os,
        length(os) AS kept,
        arrayFilter((d, o) -> o = 'h2', ds, os) AS d_h2,
        arrayFilter((d, o) -> o = 'h3', ds, os) AS d_h3,
        arrayFilter((d, o) -> o = 'wanted_h3_got_h2', ds, os) AS d_fb,
        arrayFilter((d, o) -> o = 'other', ds, os) AS d_other
    FROM runs
    WHERE {{template "runs selection" .}}
)
GROUP BY grp, ord
ORDER BY grp, ord
