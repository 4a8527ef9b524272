-- Failed parallel requests counted by hour (schema/failure_counts.sql):
-- the table, every failure stored so far (from the runs table, which holds
-- each run's failed requests apart), then the view that counts each one
-- inserted next. As 0051: the view and the table are dropped first, so
-- that a step run again after an interruption starts from an empty table,
-- and the runs table is read FINAL (in a subquery).
{{template "hourly drop" (.Over "failure_counts" "")}};
{{template "schema/failure_counts.sql" .}};
INSERT INTO {{.Name "failure_counts"}} (hour, site, continent, country, param_parallel, param_bytes, param_warmup, beacon_major,
                  bot, want, error, failures)
SELECT
    toStartOfHour(time) AS hour,
    site, continent, country, param_parallel, param_bytes, param_warmup, beacon_major, bot, w AS want, e AS error,
    count()
FROM (SELECT time, site, continent, country, param_parallel, param_bytes, param_warmup, beacon_major, bot, failed_wants, failed_errors
      FROM {{.Name "runs"}} FINAL)
ARRAY JOIN failed_wants AS w, failed_errors AS e
GROUP BY hour, site, continent, country, param_parallel, param_bytes, param_warmup, beacon_major, bot, want, error;
{{template "schema/failure_counts_mv.sql" .}}
