-- Browser runs counted by hour with what run_facts' sections count of them
-- (schema/run_fact_counts.sql): the table, every run stored so far
-- (counted from run_facts, which holds the same runs, a row each), then
-- the view that counts each run inserted next. As 0051: the view and the
-- table are dropped first, so that a step run again after an interruption
-- starts from an empty table, and run_facts is read FINAL.
{{template "hourly drop" (.Over "run_fact_counts" "")}};
{{template "schema/run_fact_counts.sql" .}};
INSERT INTO {{.Name "run_fact_counts"}} (hour, site, continent, country, browser, bot, param_parallel, param_bytes, param_warmup,
                  beacon_major, beacon_version, runs, runs_h3_wanted, runs_first_h3, runs_upgraded, runs_never_h3,
                  runs_with_errors, errors_idle, errors_warmup, errors_batch, errors_timing, errors_send)
SELECT
    toStartOfHour(time) AS hour,
    site, continent, country, browser, bot, param_parallel, param_bytes, param_warmup, beacon_major, beacon_version,
    count(), countIf(h3_wanted = 1), countIf(h3_wanted = 1 AND first_known = 1 AND first_h3 = 1),
    countIf(h3_wanted = 1 AND first_known = 1 AND first_h3 = 0 AND later_h3 = 1),
    countIf(h3_wanted = 1 AND first_known = 1 AND first_h3 = 0 AND later_h3 = 0),
    countIf(script_errors_idle + script_errors_warmup + script_errors_batch + script_errors_timing + script_errors_send > 0),
    sum(toUInt64(script_errors_idle)), sum(toUInt64(script_errors_warmup)), sum(toUInt64(script_errors_batch)),
    sum(toUInt64(script_errors_timing)), sum(toUInt64(script_errors_send))
FROM (SELECT time, site, continent, country, browser, bot, param_parallel, param_bytes, param_warmup, beacon_major, beacon_version,
             h3_wanted, first_known, first_h3, later_h3,
             script_errors_idle, script_errors_warmup, script_errors_batch, script_errors_timing, script_errors_send
      FROM {{.Name "run_facts"}} FINAL)
GROUP BY hour, site, continent, country, browser, bot, param_parallel, param_bytes, param_warmup, beacon_major, beacon_version;
{{template "schema/run_fact_counts_mv.sql" .}}
