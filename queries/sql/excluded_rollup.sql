-- excluded.sql for reports from the rollup: the same counts per trend
-- window × group, from run_counts (store migration 0051: runs counted by
-- hour with what this section counts of them) for the window's whole
-- hours, its twin for the edges' five minutes, and in the .Edges block
-- from the runs table for the minutes left, as excluded_runs_table.sql
-- reads it. A row of
-- run_counts is runs of one exclusions value, so the conditions on a
-- run's exclusion bits (the reasons, bots' runs left out of availability
-- and the intention-to-treat view) weigh whole rows. with_h3 − short are
-- the runs whose every request to the H3 origin was served over h3. The
-- trend's window is taken over t0, the hour (or five
-- minutes) or the run's time.
SELECT
    toUInt32({{.Window "t0"}}) AS t,
    grp,
    sum(n) AS n_runs,
    [
        sumIf(n, bitAnd(x, 1) != 0),
        sumIf(n, bitAnd(x, 2) != 0),
        sumIf(n, bitAnd(x, 4) != 0),
        sumIf(n, bitAnd(x, 8) != 0),
        sumIf(n, bitAnd(x, 16) != 0),
        sumIf(n, bitAnd(x, 32) != 0),
        sumIf(n, bitAnd(x, {{.BotBit}}) != 0),
        sumIf(n, bitAnd(x, 128) != 0)
    ] AS by_reason,
    sum(cold_h2) AS n_cold_h2,
    sum(cold_h3) AS n_cold_h3,
    sumIf(to_h3, bitAnd(x, {{.BotBit}}) = 0 OR @include_bots = 1) AS with_h3,
    toUInt64(sumIf(to_h3 - short, bitAnd(x, {{.BotBit}}) = 0 OR @include_bots = 1)) AS available,
    sumIf(to_h2, bitAnd(x, {{.BotBit}}) = 0) AS itt_runs_h2,
    sumIf(to_h3, bitAnd(x, {{.BotBit}}) = 0) AS itt_runs_h3,
    sumIf(failed_h2, bitAnd(x, {{.BotBit}}) = 0) AS itt_failed_runs_h2,
    sumIf(failed_h3, bitAnd(x, {{.BotBit}}) = 0) AS itt_failed_runs_h3
FROM
(
    {{- range $i, $r := .Rollups "run_counts"}}{{if $i}}
    UNION ALL{{end}}
    SELECT hour AS t0, {{.Group}} AS grp, exclusions AS x, runs AS n, runs_cold_h2 AS cold_h2, runs_cold_h3 AS cold_h3,
           runs_to_h2 AS to_h2, runs_to_h3 AS to_h3, runs_failed_h2 AS failed_h2, runs_failed_h3 AS failed_h3, runs_h3_short AS short
    FROM {{.Table}}
    WHERE {{template "rollup slots" .}}
      AND {{template "design" .}}
    {{- end}}
    {{- if .Edges}}
    UNION ALL
    SELECT time AS t0, {{.Group}} AS grp, exclusions AS x, toUInt64(1) AS n, toUInt64(cold_h2 > 0) AS cold_h2, toUInt64(cold_h3 > 0) AS cold_h3,
           toUInt64(has(wants, 2)) AS to_h2, toUInt64(h3n > 0) AS to_h3, toUInt64(has(failed_wants, 2)) AS failed_h2,
           toUInt64(has(failed_wants, 3)) AS failed_h3, toUInt64(h3ok < h3n) AS short
    FROM runs
    PREWHERE {{template "edge hours" .}}
    WHERE {{template "design" .}}
    {{- end}}
)
GROUP BY t, grp
