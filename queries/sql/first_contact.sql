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
-- include_bots, browser runs only. Each run is one row of run_facts (its
-- flags computed from all its samples as they were stored, store
-- migration 0048), counted by group of the report's grouping × browser
-- in one pass (Go sums the rows by group and by browser). Grouped
-- by collector, a run counts under the POP that served its first request
-- to the HTTP/3 origin. Parameters: since, until (unix seconds), site
-- twice, include_bots (0/1).
SELECT
    /*GROUP*/ AS grp,
    if(browser = '', 'unknown', browser) AS run_browser,
    count() AS n_runs,
    countIf(param_warmup = 0) AS n_not_measured,
    countIf(param_warmup > 0 AND first_known = 1 AND first_h3 = 1) AS n_h3_first,
    countIf(param_warmup > 0 AND first_known = 1 AND first_h3 = 0 AND later_h3 = 1) AS n_upgraded,
    countIf(param_warmup > 0 AND first_known = 1 AND first_h3 = 0 AND later_h3 = 0) AS n_never
FROM run_facts
WHERE time >= toDateTime(?, 'UTC') AND time < toDateTime(?, 'UTC')
  AND (? = '' OR site = ?)
  AND (? = 1 OR bot = 0)
  AND h3_wanted = 1
  AND /*PLACE*/
GROUP BY grp, run_browser
