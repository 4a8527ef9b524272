-- Browser runs counted by hour × site × region × browser × bot × design ×
-- script version, whatever phase they reached, fed by run_fact_counts_mv
-- from every block inserted into samples: what run_facts' two sections
-- count of them (queries/sql/run_facts.sql) — the runs with a request to
-- the H3 origin, how the first of those went (over h3; over h1 or h2 and
-- upgraded later; never h3; over h3 and known before the page, or learnt
-- from the page's own loads: run_facts.alt_svc), and the script's own
-- errors by stage. The
-- report from the rollup reads them here for the window's whole hours
-- instead of run_facts' row a run. A run is inserted once (store.Stored)
-- and its first-contact flags (store.RunFlags) are on its first sample, so
-- the view's counts add up to exact ones. SummingMergeTree adds up the rows
-- of a key as parts merge, and queries sum them anyway. Browser runs only:
-- source is a constant. In cluster mode the Distributed table spreads the
-- copy of earlier runs (migration 0052) by site and hour.
CREATE TABLE IF NOT EXISTS {{.Local (.Rollup "run_fact_counts")}}{{.OnCluster}}
(
    hour            DateTime('UTC'),
    site            String,
    continent       String,
    country         String,
    browser         String,
    bot             UInt8,
{{template "design columns" .}}
    beacon_version  String,
    runs            UInt64,
    runs_h3_wanted  UInt64,
    runs_first_h3   UInt64,
    runs_upgraded   UInt64,
    runs_never_h3   UInt64,
{{- if .Since 60}}
    runs_first_h3_before UInt64,
    runs_first_h3_page UInt64,
{{- end}}
    runs_with_errors UInt64,
    errors_idle     UInt64,
    errors_warmup   UInt64,
    errors_batch    UInt64,
    errors_timing   UInt64,
    errors_send     UInt64,
{{template "hourly table" (.Hourly "SummingMergeTree" (.Rollup "run_fact_counts") "site, hour, continent, country, browser, bot, param_parallel, param_bytes, param_warmup, beacon_major, beacon_version")}}
