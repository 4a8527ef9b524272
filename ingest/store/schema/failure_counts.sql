-- Failed parallel requests counted by hour × site × region × design × bot
-- × origin (want) × error code, fed by failure_counts_mv from every block
-- inserted into samples: the runs table's failed_wants and failed_errors,
-- counted. The report from the rollup reads its failures section here for
-- the window's whole hours (queries/sql/failures_rollup.sql): a few hundred
-- rows a day where the runs table holds a row a run, which every report
-- would ARRAY JOIN. A sample is inserted once (store.Stored), so the counts are
-- exact; SummingMergeTree adds up the rows of a key as parts merge, and
-- queries sum them anyway. Browser runs only: source is a constant, as in
-- the runs table. In cluster mode the Distributed table spreads the copy
-- of earlier failures (migration 0053) by site and hour.
CREATE TABLE IF NOT EXISTS {{.Local (.Rollup "failure_counts")}}{{.OnCluster}}
(
{{template "hourly key" .}}
    bot             UInt8,
    want            Enum8('unknown' = 0, 'h1' = 1, 'h2' = 2, 'h3' = 3),
    error           String,
    failures        UInt64,
{{template "hourly table" (.Hourly "SummingMergeTree" (.Rollup "failure_counts") "site, hour, continent, country, param_parallel, param_bytes, param_warmup, beacon_major, bot, want, error")}}
