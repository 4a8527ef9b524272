-- The design parameters beyond the first three (0055's param_extra): a
-- column of the per-run tables, and the last column of every hourly
-- table's sorting key, so that reports keep runs of different designs
-- apart (queries.Design) and a new parameter needs no migration. One
-- column a statement: a step interrupted runs again from its first
-- statement, and a column already there is skipped (store.columnAdded).
ALTER TABLE {{.Local "runs"}}{{.OnCluster}} ADD COLUMN param_extra String AFTER beacon_major;
ALTER TABLE {{.Local "run_facts"}}{{.OnCluster}} ADD COLUMN param_extra String AFTER beacon_major;
{{- if not .Cluster}}
-- One server: a sorting key may grow by a column added in the same
-- statement, without a DEFAULT (the rows stored before read ''), which
-- changes no stored part.
ALTER TABLE samples_rollup ADD COLUMN param_extra String AFTER beacon_major,
    MODIFY ORDER BY (site, hour, continent, country, param_parallel, param_bytes, param_warmup, beacon_major, param_order, outcome, want, failed, exclusions, param_extra);
ALTER TABLE run_counts ADD COLUMN param_extra String AFTER beacon_major,
    MODIFY ORDER BY (site, hour, continent, country, param_parallel, param_bytes, param_warmup, beacon_major, param_order, bot, exclusions, param_extra);
ALTER TABLE run_fact_counts ADD COLUMN param_extra String AFTER beacon_major,
    MODIFY ORDER BY (site, hour, continent, country, browser, bot, param_parallel, param_bytes, param_warmup, beacon_major, beacon_version, param_extra);
ALTER TABLE failure_counts ADD COLUMN param_extra String AFTER beacon_major,
    MODIFY ORDER BY (site, hour, continent, country, param_parallel, param_bytes, param_warmup, beacon_major, bot, want, error, param_extra);
ALTER TABLE itt_rollup ADD COLUMN param_extra String AFTER beacon_major,
    MODIFY ORDER BY (site, hour, continent, country, param_parallel, param_bytes, param_warmup, beacon_major, want, failed, bot, param_extra);
-- The views that fill them, made again to carry the column
-- (schema/*_mv.sql). Migrations run before ingest starts, so no insert
-- arrives between a view's drop and its creation.
DROP TABLE IF EXISTS samples_rollup_mv;
{{template "schema/samples_rollup_mv.sql" .}};
DROP TABLE IF EXISTS run_counts_mv;
{{template "schema/run_counts_mv.sql" .}};
DROP TABLE IF EXISTS run_fact_counts_mv;
{{template "schema/run_fact_counts_mv.sql" .}};
DROP TABLE IF EXISTS failure_counts_mv;
{{template "schema/failure_counts_mv.sql" .}};
DROP TABLE IF EXISTS itt_rollup_mv;
{{template "schema/itt_rollup_mv.sql" .}};
{{- else}}
-- Cluster mode: each Distributed table takes its structure from its local
-- tables when it is created (as 0050), so those of the three tables are
-- made again. 18.16 cannot change a replicated table's sorting key: the
-- hourly tables are built again, as their steps built them, from the
-- tables that hold the same rows — samples_rollup from samples (which
-- retention keeps as long), the others as 0051 to 0054 did — each started
-- from an empty table, so that a step run again starts them over.
DROP TABLE IF EXISTS {{.Name "samples"}}{{.OnCluster}};
{{template "schema/distributed.sql" (.Over "samples" "cityHash64(toString(run_id))")}};
DROP TABLE IF EXISTS {{.Name "runs"}}{{.OnCluster}};
{{template "schema/distributed.sql" (.Over "runs" "cityHash64(toString(run_id))")}};
DROP TABLE IF EXISTS {{.Name "run_facts"}}{{.OnCluster}};
{{template "schema/distributed.sql" (.Over "run_facts" "cityHash64(toString(run_id))")}};
{{template "hourly drop" (.Over "samples_rollup" "")}};
{{template "schema/samples_rollup.sql" .}};
INSERT INTO {{.Name "samples_rollup"}} (hour, site, continent, country, {{template "design" .}}, param_order, outcome, want,
                  failed, exclusions, samples, runs, duration)
{{- template "samples rollup from" (.Reading (.Name "samples"))}};
{{template "schema/samples_rollup_mv.sql" .}};
{{template "migrations/0051_run_counts.sql" .}};
{{template "migrations/0052_run_fact_counts.sql" .}};
{{template "migrations/0053_failure_counts.sql" .}};
{{template "migrations/0054_itt_rollup.sql" .}};
{{- end}}
-- The per-run tables' views, made again to carry the column.
DROP TABLE IF EXISTS {{.Name "runs_mv"}}{{.OnCluster}};
{{template "schema/runs_mv.sql" .}};
DROP TABLE IF EXISTS {{.Name "run_facts_mv"}}{{.OnCluster}};
{{template "schema/run_facts_mv.sql" .}}
