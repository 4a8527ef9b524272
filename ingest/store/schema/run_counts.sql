-- Runs counted by hour × site × region × design × batch order × bot ×
-- exclusions, fed by run_counts_mv from every block inserted into samples:
-- the runs with a parallel request (the runs table's runs); per outcome,
-- those with a parallel request of that outcome (runs_h2, …); and what the
-- excluded runs' section counts of them (queries/sql/excluded.sql): the
-- runs with a cold request to each origin, with a request to each origin,
-- with a failed one, and with an H3-origin request not served over h3
-- (runs_h3_short: with_h3 − short are the runs HTTP/3 was available to).
-- The report from the rollup reads its exact run counts here: a few thousand
-- rows a day where the runs table holds a row a run. A run is inserted
-- once (store.Stored) and
-- its flags (store.RunFlags) are on one of its samples, so the view's
-- counts add up to exact ones;
-- SummingMergeTree adds up the rows of a key as parts merge, and queries
-- sum them anyway. Browser runs only: source is a constant, as in the runs
-- table. In cluster mode the Distributed table spreads the copy of earlier
-- runs (migration 0051) by site and hour; reads sum every shard's rows.
CREATE TABLE IF NOT EXISTS {{.Local (.Rollup "run_counts")}}{{.OnCluster}}
(
{{template "hourly key" .}}
    param_order     Enum8('h2first' = 1, 'h3first' = 2),
    bot             UInt8,
    exclusions      UInt8,
    runs            UInt64,
    runs_h2         UInt64,
    runs_h3         UInt64,
    runs_wanted_h3_got_h2 UInt64,
    runs_other      UInt64,
    runs_cold_h2    UInt64,
    runs_cold_h3    UInt64,
    runs_to_h2      UInt64,
    runs_to_h3      UInt64,
    runs_failed_h2  UInt64,
    runs_failed_h3  UInt64,
    runs_h3_short   UInt64,
{{template "hourly table" (.Hourly "SummingMergeTree" (.Rollup "run_counts") "site, hour, continent, country, param_parallel, param_bytes, param_warmup, beacon_major, param_order, bot, exclusions")}}
