-- Runs counted by hour and the report's keys (schema/run_counts.sql): the
-- table, every run stored so far (counted from the runs table, which
-- holds the same runs, a row each), then the view that counts each run
-- inserted next. Migrations run before ingest starts, so no run arrives
-- between the copy and the view. Run again after an interruption, it
-- starts over from an empty table: a count copied twice would stay
-- (SummingMergeTree adds it up), so the view and the table are dropped
-- first. The copy reads the runs table FINAL (in a subquery: 18.16 refuses
-- toStartOfHour(time) beside FINAL on a table sorted by it): a run copied twice into it
-- (cluster migration 0029) is counted once.
{{template "hourly drop" (.Over "run_counts" "")}};
{{template "schema/run_counts.sql" .}};
INSERT INTO {{.Name "run_counts"}} (hour, site, continent, country, param_parallel, param_bytes, param_warmup, beacon_major,
                  param_order, bot, exclusions, runs, runs_h2, runs_h3, runs_wanted_h3_got_h2, runs_other,
                  runs_cold_h2, runs_cold_h3, runs_to_h2, runs_to_h3, runs_failed_h2, runs_failed_h3, runs_h3_short)
SELECT
    toStartOfHour(time) AS hour,
    site, continent, country, param_parallel, param_bytes, param_warmup, beacon_major, param_order, bot, exclusions,
    count(), countIf(has(outcomes, 1)), countIf(has(outcomes, 2)), countIf(has(outcomes, 3)), countIf(has(outcomes, 0)),
    countIf(cold_h2 > 0), countIf(cold_h3 > 0), countIf(has(wants, 2)), countIf(h3n > 0),
    countIf(has(failed_wants, 2)), countIf(has(failed_wants, 3)), countIf(h3ok < h3n)
FROM (SELECT time, site, continent, country, param_parallel, param_bytes, param_warmup, beacon_major, param_order, bot, exclusions,
             outcomes, wants, failed_wants, h3n, h3ok, cold_h2, cold_h3
      FROM {{.Name "runs"}} FINAL)
GROUP BY hour, site, continent, country, param_parallel, param_bytes, param_warmup, beacon_major, param_order, bot, exclusions;
{{template "schema/run_counts_mv.sql" .}}
