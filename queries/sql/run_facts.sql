-- The two sections read from run_facts (store migration 0048: one row a
-- browser run, its flags computed from all its samples as they were
-- stored), in one pass: counted by group of the report's grouping ×
-- browser, and Go sums the rows by group and by browser.
--
-- First contact (the fc_ columns): how each run's first request to the
-- HTTP/3 origin went — seq 0, the first warm-up (beacon/PROTOCOL.md: seq
-- 0 … w-1 are the warm-ups to the H3 origin). h3 there means the browser
-- knew the H3 origin's HTTP/3 before that request: known before the page
-- (an HTTPS DNS record, or an Alt-Svc cached on an earlier visit) when the
-- page loaded nothing from the H3 origin before, or that load was already
-- over h3 (alt_svc 1, 4: fc_h3_before); learnt from the page's own loads
-- over TCP, the script's among them (alt_svc 2, 3: fc_h3_page); neither
-- when the script did not record it (0) or the load hid its protocol (5).
-- h2 or h1 there and h3 on a later request to the H3 origin, that it
-- needed this run's Alt-Svc; h2 or h1 throughout, that it never got h3. A run of
-- warm-up 0 (param_warmup = 0) has no such request: not measured. A run
-- whose first request is missing, failed or has no protocol is neither
-- (counted by Go as unknown: n_runs minus the others). Every design and
-- exclusion (the first request is made before any of them matter).
-- Grouped by collector, a run counts under the POP that served its first
-- request to the HTTP/3 origin.
--
-- Script errors (the se_ columns): the beacon script's own errors in each
-- run, by the stage it was in (samples.script_errors_*, store migration
-- 0047), whatever phase the run reached. Runs of the report's design
-- whatever their exclusions, for a run a script error cut short is one the
-- headline leaves out; of beacon @script_errors_since (ScriptErrorsSince,
-- as an array of version numbers) and later: older scripts always report
-- none. A run cut short before its first sample has no row.
--
-- Both: bots' runs only with @include_bots. One pass is cheaper than one
-- per section.
WITH
    h3_wanted = 1 AS fc,
    {{template "script errors since" .}} AS se
SELECT
    {{.Group}} AS grp,
    if(browser = '', 'unknown', browser) AS run_browser,
    countIf(fc) AS fc_runs,
    countIf(fc AND param_warmup = 0) AS fc_not_measured,
    countIf(fc AND param_warmup > 0 AND first_known = 1 AND first_h3 = 1) AS fc_h3_first,
    countIf(fc AND param_warmup > 0 AND first_known = 1 AND first_h3 = 1 AND alt_svc IN (1, 4)) AS fc_h3_before,
    countIf(fc AND param_warmup > 0 AND first_known = 1 AND first_h3 = 1 AND alt_svc IN (2, 3)) AS fc_h3_page,
    countIf(fc AND param_warmup > 0 AND first_known = 1 AND first_h3 = 0 AND later_h3 = 1) AS fc_upgraded,
    countIf(fc AND param_warmup > 0 AND first_known = 1 AND first_h3 = 0 AND later_h3 = 0) AS fc_never,
    countIf(se) AS se_runs,
    countIf(se AND script_errors_idle + script_errors_warmup + script_errors_batch + script_errors_timing + script_errors_send > 0) AS se_with_errors,
    sumIf(script_errors_idle, se) AS se_idle,
    sumIf(script_errors_warmup, se) AS se_warmup,
    sumIf(script_errors_batch, se) AS se_batch,
    sumIf(script_errors_timing, se) AS se_timing,
    sumIf(script_errors_send, se) AS se_send
FROM run_facts
WHERE time >= toDateTime(@since, 'UTC') AND time < toDateTime(@until, 'UTC')
  AND (@site = '' OR site = @site)
  AND (@include_bots = 1 OR bot = 0)
  AND {{template "place" .}}
  AND (fc OR se)
GROUP BY grp, run_browser
