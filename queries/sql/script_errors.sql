-- Script errors by browser: the beacon script's own errors in each run, by
-- the stage it was in (samples.script_errors_*, store migration 0047). The
-- counts repeat in every row of a run, so each run is taken once. Browser
-- runs of the report's design (handshake rows are the agent's) whatever
-- their exclusions, for a run a script error cut short is one the headline
-- leaves out; bots' runs only with include_bots; beacon 1.3.0 and later
-- (ScriptErrorsSince, filled in by Go as an array): older scripts always
-- report none. A run cut short before its first sample has no row.
-- Parameters: since, until (unix seconds), site twice, include_bots (0/1).
SELECT
    grp,
    count() AS n_runs,
    countIf(e_idle + e_warmup + e_batch + e_timing + e_send > 0) AS n_with_errors,
    sum(e_idle) AS n_idle,
    sum(e_warmup) AS n_warmup,
    sum(e_batch) AS n_batch,
    sum(e_timing) AS n_timing,
    sum(e_send) AS n_send
FROM
(
    SELECT /*GROUP*/ AS grp, run_id,
           any(script_errors_idle) AS e_idle,
           any(script_errors_warmup) AS e_warmup,
           any(script_errors_batch) AS e_batch,
           any(script_errors_timing) AS e_timing,
           any(script_errors_send) AS e_send
    FROM samples
    WHERE time >= toDateTime(?, 'UTC') AND time < toDateTime(?, 'UTC')
      AND (? = '' OR site = ?)
      AND phase != 'handshake'
      AND (? = 1 OR bot = 0)
      AND arrayMap(x -> toUInt32OrZero(x), splitByChar('.', beacon_version)) >= /*SINCE*/
      AND /*DESIGN*/
    GROUP BY grp, run_id
)
GROUP BY grp
ORDER BY n_runs DESC, grp
