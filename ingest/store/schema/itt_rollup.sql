-- Hourly rollup of parallel requests by site × region × design × origin
-- (want) × failed × bot, fed by itt_rollup_mv, with the same states as
-- samples_rollup's (a count, and t-digest quantile states of the duration,
-- a failed request's at the script's timeout): what the
-- intention-to-treat view reads for the window's whole hours
-- (queries/sql/itt_rollup.sql). Its key leaves out what that view does not
-- select by (batch order, outcome, exclusions but the bot's), so it holds
-- far fewer states than samples_rollup, and merging states is most of the
-- view's time. Browser rows only: source is a constant, as in
-- samples_rollup. In cluster mode the Distributed table spreads the copy
-- of earlier hours (migration 0054) by site and hour.
CREATE TABLE IF NOT EXISTS {{.Local (.Rollup "itt_rollup")}}{{.OnCluster}}
(
{{template "hourly key" .}}
    want            Enum8('unknown' = 0, 'h1' = 1, 'h2' = 2, 'h3' = 3),
    failed          UInt8,
    bot             UInt8,
    samples         AggregateFunction(count),
    duration        AggregateFunction(quantilesTDigest(0.5, 0.75, 0.9, 0.95, 0.99), Float32),
{{template "hourly table" (.Hourly "AggregatingMergeTree" (.Rollup "itt_rollup") "site, hour, continent, country, param_parallel, param_bytes, param_warmup, beacon_major, want, failed, bot")}}
