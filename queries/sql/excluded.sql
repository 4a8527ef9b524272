-- Per group, the runs of the report's design: how many there are, how many
-- carry each exclusion reason (a run counts once under every reason it
-- has; store.ExclusionNames gives the order), and HTTP/3 availability per
-- run: of the runs with an H3 batch (bots' only with @include_bots), those
-- whose every batch request to the H3 origin was served over h3 (a failed
-- or timed-out request counts against). Cold runs are also counted by the
-- origin of their cold requests, so a bias such as a browser's background
-- QUIC handshake shows on its side. And the intention-to-treat view's
-- exact run counts (itt.go; the rollup holds HyperLogLog states): the
-- non-bot runs that sent requests to each origin, and those of them with a
-- failed one. The runs come from the runs table, one row per run
-- (excluded_runs_table.sql, store migration 0028), or, by collector, a
-- per-sample column, from the samples grouped by run
-- (excluded_runs_samples.sql); .RunsTable chooses. By the trend's window
-- too (.Window over run_time: the runs table's hour or day, one window
-- from the samples): Go sums the windows, and the trend's availability
-- per window comes from here.
SELECT
    toUInt32({{.Window "run_time"}}) AS t,
    grp,
    count() AS n_runs,
    [
        countIf(bitAnd(x, 1) != 0),
        countIf(bitAnd(x, 2) != 0),
        countIf(bitAnd(x, 4) != 0),
        countIf(bitAnd(x, 8) != 0),
        countIf(bitAnd(x, 16) != 0),
        countIf(bitAnd(x, 32) != 0),
        countIf(bitAnd(x, {{.BotBit}}) != 0),
        countIf(bitAnd(x, 128) != 0)
    ] AS by_reason,
    countIf(cold_h2 > 0) AS n_cold_h2,
    countIf(cold_h3 > 0) AS n_cold_h3,
    countIf(h3n > 0 AND (bitAnd(x, {{.BotBit}}) = 0 OR @include_bots = 1)) AS with_h3,
    countIf(h3n > 0 AND h3ok = h3n AND (bitAnd(x, {{.BotBit}}) = 0 OR @include_bots = 1)) AS available,
    countIf(bitAnd(x, {{.BotBit}}) = 0 AND to_h2) AS itt_runs_h2,
    countIf(bitAnd(x, {{.BotBit}}) = 0 AND h3n > 0) AS itt_runs_h3,
    countIf(bitAnd(x, {{.BotBit}}) = 0 AND failed_h2) AS itt_failed_runs_h2,
    countIf(bitAnd(x, {{.BotBit}}) = 0 AND failed_h3) AS itt_failed_runs_h3
FROM
(
{{if .RunsTable}}{{template "sql/excluded_runs_table.sql" .}}{{else}}{{template "sql/excluded_runs_samples.sql" .}}{{end}}
)
GROUP BY t, grp
