-- Script errors by browser: the beacon script's own errors in each run, by
-- the stage it was in (samples.script_errors_*, store migration 0047),
-- from run_facts (migration 0048): one row a run, whatever phase it
-- reached. Browser runs of the report's design whatever their
-- exclusions, for a run a script error cut short is one the headline
-- leaves out; bots' runs only with include_bots; beacon 1.3.0 and later
-- (ScriptErrorsSince, filled in by Go as an array): older scripts always
-- report none. A run cut short before its first sample has no row.
-- Parameters: since, until (unix seconds), site twice, include_bots (0/1).
SELECT
    /*GROUP*/ AS grp,
    count() AS n_runs,
    countIf(script_errors_idle + script_errors_warmup + script_errors_batch + script_errors_timing + script_errors_send > 0) AS n_with_errors,
    sum(script_errors_idle) AS n_idle,
    sum(script_errors_warmup) AS n_warmup,
    sum(script_errors_batch) AS n_batch,
    sum(script_errors_timing) AS n_timing,
    sum(script_errors_send) AS n_send
FROM run_facts
WHERE time >= toDateTime(?, 'UTC') AND time < toDateTime(?, 'UTC')
  AND (? = '' OR site = ?)
  AND (? = 1 OR bot = 0)
  AND arrayMap(x -> toUInt32OrZero(x), splitByChar('.', beacon_version)) >= /*SINCE*/
  AND /*DESIGN*/
GROUP BY grp
ORDER BY n_runs DESC, grp
