-- runs.sql from the runs table: one row per run holding its parallel
-- samples as arrays (store migration 0039), so the bootstrap reads a run
-- instead of its 13 samples. The same selection, the same sample of runs
-- (the same bounds of run_id, @groups, @bounds and @bound, read from
-- runs_by_id, sorted for it: "sample range") and the same
-- columns, for reports whose selection the runs table holds: parallel
-- batches of browser runs (not warm-ups, not by collector, a per-sample
-- column, not the agent's). A run's failed requests are left out of its
-- arrays unless failures are included, and a run left with none is not
-- returned, as runs.sql returns no such run. bot is the run's, as on each
-- of its samples. As runs.sql, one row per run, its samples packed into
-- strings, here without parallel flags (p empty: all are). .KeptDurations
-- and .Kept are each run's durations and outcomes the selection keeps (as
-- in points_runs.sql).
SELECT
    grp,
    arrayStringConcat(arrayMap(x -> substring(concat(reinterpretAsString(x), '\0\0\0\0'), 1, 4), ds)) AS d,
    arrayStringConcat(arrayMap(x -> substring(concat(reinterpretAsString(x), '\0'), 1, 1), os)) AS o,
    '' AS p,
    h3_first
FROM
(
    SELECT
        {{.Group}} AS grp,
        {{.KeptDurations}} AS ds,
        arrayMap(x -> toUInt8(x), {{.Kept}}) AS os,
        toUInt8(param_order = 'h3first') AS h3_first
    FROM runs_by_id
    PREWHERE {{template "sample range" .}}
         AND {{template "run sample" .}}
    WHERE {{template "runs selection" .}}
)
WHERE notEmpty(ds)
