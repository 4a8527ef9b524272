-- The intention-to-treat view's rollup (schema/itt_rollup.sql): the table,
-- every hour stored so far (samples_rollup's states merged into the
-- coarser key: the same samples, counted and digested the same way), then
-- the view that feeds each block inserted next. As 0051: the view and the
-- table are dropped first, so that a step run again after an interruption
-- starts from an empty table.
{{template "hourly drop" (.Over "itt_rollup" "")}};
{{template "schema/itt_rollup.sql" .}};
INSERT INTO {{.Name "itt_rollup"}} (hour, site, continent, country, param_parallel, param_bytes, param_warmup, beacon_major,
                  want, failed, bot, samples, duration)
SELECT
    hour, site, continent, country, param_parallel, param_bytes, param_warmup, beacon_major, want, failed,
    toUInt8(bitAnd(exclusions, {{.BotBit}}) != 0) AS bot,
    countMergeState(samples),
    quantilesTDigestMergeState(0.5, 0.75, 0.9, 0.95, 0.99)(duration)
FROM {{.Name "samples_rollup"}}
GROUP BY hour, site, continent, country, param_parallel, param_bytes, param_warmup, beacon_major, want, failed, bot;
{{template "schema/itt_rollup_mv.sql" .}}
