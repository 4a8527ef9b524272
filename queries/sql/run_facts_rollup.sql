-- run_facts.sql for reports from the rollup: the same two sections counted
-- by group × browser, from run_fact_counts (store migration 0052: browser
-- runs counted by hour with what these sections count of them) for the
-- window's whole hours, its twin for the edges' five minutes, and in the
-- .Edges block from run_facts for the minutes left, as run_facts.sql
-- reads it. fc: runs with a request to the H3 origin; se: runs of the
-- report's design and of beacon @script_errors_since or later, whose
-- errors run_fact_counts holds as sums, a column of each branch: as an
-- alias of the outer query, 26.x's analyzer computes it again for each
-- sumIf that reads it.
SELECT
    grp,
    run_browser,
    sum(h3_wanted) AS fc_runs,
    sumIf(h3_wanted, param_warmup = 0) AS fc_not_measured,
    sumIf(first_h3, param_warmup > 0) AS fc_h3_first,
    sumIf(first_h3_before, param_warmup > 0) AS fc_h3_before,
    sumIf(first_h3_page, param_warmup > 0) AS fc_h3_page,
    sumIf(upgraded, param_warmup > 0) AS fc_upgraded,
    sumIf(never_h3, param_warmup > 0) AS fc_never,
    sumIf(n, se) AS se_runs,
    sumIf(with_errors, se) AS se_with_errors,
    sumIf(e_idle, se) AS se_idle,
    sumIf(e_warmup, se) AS se_warmup,
    sumIf(e_batch, se) AS se_batch,
    sumIf(e_timing, se) AS se_timing,
    sumIf(e_send, se) AS se_send
FROM
(
    {{- range $i, $r := .Rollups "run_fact_counts"}}{{if $i}}
    UNION ALL{{end}}
    SELECT {{.Group}} AS grp, if(browser = '', 'unknown', browser) AS run_browser, param_warmup,
           runs AS n, runs_h3_wanted AS h3_wanted, runs_first_h3 AS first_h3,
           runs_first_h3_before AS first_h3_before, runs_first_h3_page AS first_h3_page, runs_upgraded AS upgraded, runs_never_h3 AS never_h3,
           runs_with_errors AS with_errors, errors_idle AS e_idle, errors_warmup AS e_warmup, errors_batch AS e_batch,
           errors_timing AS e_timing, errors_send AS e_send,
           {{template "script errors since" .}} AS se
    FROM {{.Table}}
    WHERE {{template "rollup slots" .}}
      AND (@include_bots = 1 OR bot = 0)
      AND {{template "place" .}}
    {{- end}}
    {{- if .Edges}}
    UNION ALL
    SELECT {{.Group}} AS grp, if(browser = '', 'unknown', browser) AS run_browser, param_warmup,
           toUInt64(1) AS n, toUInt64(h3_wanted) AS h3_wanted,
           toUInt64(h3_wanted AND first_known AND first_h3) AS first_h3,
           toUInt64(h3_wanted AND first_known AND first_h3 AND alt_svc IN (1, 4)) AS first_h3_before,
           toUInt64(h3_wanted AND first_known AND first_h3 AND alt_svc IN (2, 3)) AS first_h3_page,
           toUInt64(h3_wanted AND first_known AND NOT first_h3 AND later_h3) AS upgraded,
           toUInt64(h3_wanted AND first_known AND NOT first_h3 AND NOT later_h3) AS never_h3,
           toUInt64(script_errors_idle + script_errors_warmup + script_errors_batch + script_errors_timing + script_errors_send > 0) AS with_errors,
           toUInt64(script_errors_idle) AS e_idle, toUInt64(script_errors_warmup) AS e_warmup, toUInt64(script_errors_batch) AS e_batch,
           toUInt64(script_errors_timing) AS e_timing, toUInt64(script_errors_send) AS e_send,
           {{template "script errors since" .}} AS se
    FROM run_facts
    PREWHERE {{template "edge hours" .}}
    WHERE (@include_bots = 1 OR bot = 0)
      AND {{template "place" .}}
    {{- end}}
)
GROUP BY grp, run_browser
