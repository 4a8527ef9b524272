-- First contact: how each browser run's first request to the HTTP/3
-- origin went — seq 0, the first warm-up (beacon/PROTOCOL.md: seq 0 … w-1
-- are the warm-ups to the H3 origin). h3 there means the browser reached
-- HTTP/3 before any response of this run could advertise it (an HTTPS DNS
-- record, or an Alt-Svc cached from an earlier visit); h2 or h1 there and
-- h3 on a later request to the H3 origin, that it needed this run's
-- Alt-Svc; h2 or h1 throughout, that it never got h3. A run of warm-up 0
-- (param_warmup = 0) has no such request: not measured. A run whose first
-- request is missing, failed or has no protocol is neither (counted by Go
-- as unknown: n_runs minus the others). Every design and exclusion (the
-- first request is made before any of them matter), bots' runs only with
-- include_bots, browser rows only. A replayed run's duplicate rows fold in
-- the per-run max. Each run is counted in its group of the report's
-- grouping (by = 'group') and in its browser's (by = 'browser'), from one
-- pass over the rows: two queries took twice as long (250–280 against
-- 95–130 ms, warm, for 1.1 M samples on 18.16). Parameters: since, until
-- (unix seconds), site twice, include_bots (0/1).
SELECT
    by,
    grp,
    count() AS n_runs,
    countIf(warm = 0) AS n_not_measured,
    countIf(warm > 0 AND first_known = 1 AND first_h3 = 1) AS n_h3_first,
    countIf(warm > 0 AND first_known = 1 AND first_h3 = 0 AND later_h3 = 1) AS n_upgraded,
    countIf(warm > 0 AND first_known = 1 AND first_h3 = 0 AND later_h3 = 0) AS n_never
FROM
(
    SELECT run_id,
           any(/*GROUP*/) AS run_grp,
           any(if(browser = '', 'unknown', browser)) AS run_browser,
           max(param_warmup) AS warm,
           max(seq = 0 AND phase = 'warmup' AND error = '' AND (got = 'h1' OR got = 'h2' OR got = 'h3')) AS first_known,
           max(seq = 0 AND phase = 'warmup' AND error = '' AND got = 'h3') AS first_h3,
           max(seq > 0 AND error = '' AND got = 'h3') AS later_h3
    FROM samples
    WHERE time >= toDateTime(?, 'UTC') AND time < toDateTime(?, 'UTC')
      AND (? = '' OR site = ?)
      AND source = 'browser'
      AND (? = 1 OR bot = 0)
      AND want = 'h3'
      AND /*PLACE*/
    GROUP BY run_id
)
ARRAY JOIN ['group', 'browser'] AS by, [run_grp, run_browser] AS grp
GROUP BY by, grp
ORDER BY by, n_runs DESC, grp
