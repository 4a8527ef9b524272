-- The hourly tables' five-minute twins (schema.go's fiveMinuteTables):
-- for each, the twin, every sample stored so far rolled up by five minutes
-- as its view rolls up a block, then the view. As 0063: each view and
-- table is dropped first, so that a step run again after an interruption
-- starts from empty tables; migrations run before ingest starts, so no row
-- arrives between a fill and its view.
{{- with .FiveMinutes}}
{{template "hourly drop" (.Over "samples_rollup_5m" "")}};
{{template "schema/samples_rollup.sql" .}};
INSERT INTO {{.Name "samples_rollup_5m"}} (hour, site, continent, country, {{template "design" .}}, param_order, outcome, want,
                  failed, exclusions, samples, runs, duration)
{{- template "samples rollup from" (.Reading (.Name "samples"))}};
{{template "schema/samples_rollup_mv.sql" .}};
{{template "hourly drop" (.Over "itt_rollup_5m" "")}};
{{template "schema/itt_rollup.sql" .}};
INSERT INTO {{.Name "itt_rollup_5m"}} (hour, site, continent, country, {{template "design" .}}, want, failed, bot, samples, duration)
{{- template "itt rollup from" (.Reading (.Name "samples"))}};
{{template "schema/itt_rollup_mv.sql" .}};
{{template "hourly drop" (.Over "run_counts_5m" "")}};
{{template "schema/run_counts.sql" .}};
INSERT INTO {{.Name "run_counts_5m"}} (hour, site, continent, country, {{template "design" .}},
                  param_order, bot, exclusions, runs, runs_h2, runs_h3, runs_wanted_h3_got_h2, runs_other,
                  runs_cold_h2, runs_cold_h3, runs_to_h2, runs_to_h3, runs_failed_h2, runs_failed_h3, runs_h3_short)
{{- template "run counts from" (.Reading (.Name "samples"))}};
{{template "schema/run_counts_mv.sql" .}};
{{template "hourly drop" (.Over "run_fact_counts_5m" "")}};
{{template "schema/run_fact_counts.sql" .}};
INSERT INTO {{.Name "run_fact_counts_5m"}} (hour, site, continent, country, browser, bot, {{template "design" .}},
                  beacon_version, runs, runs_h3_wanted, runs_first_h3, runs_upgraded, runs_never_h3,
                  runs_first_h3_before, runs_first_h3_page,
                  runs_with_errors, errors_idle, errors_warmup, errors_batch, errors_timing, errors_send)
{{- template "run fact counts from" (.Reading (.Name "samples"))}};
{{template "schema/run_fact_counts_mv.sql" .}};
{{template "hourly drop" (.Over "failure_counts_5m" "")}};
{{template "schema/failure_counts.sql" .}};
INSERT INTO {{.Name "failure_counts_5m"}} (hour, site, continent, country, {{template "design" .}}, bot, want, error, failures)
{{- template "failure counts from" (.Reading (.Name "samples"))}};
{{template "schema/failure_counts_mv.sql" .}};
{{template "hourly drop" (.Over "handshake_rollup_5m" "")}};
{{template "schema/handshake_rollup.sql" .}};
INSERT INTO {{.Name "handshake_rollup_5m"}} (hour, site, continent, country, {{template "design" .}},
                  got, retried, samples, duration, connect, fastest, resumed, early)
{{- template "handshake rollup from" (.Reading (.Name "samples"))}};
{{template "schema/handshake_rollup_mv.sql" .}}
{{- end}}
