-- What the tables counted or rolled up by hour share: "hourly key" is the
-- first columns of samples_rollup, run_counts, failure_counts and
-- itt_rollup, the hour, site, region and design, in that order; "hourly
-- table" the end of the last three and run_fact_counts, after their own
-- columns: source as a constant (browser rows only), the engine (.Kind,
-- replicated in cluster mode) partitioned by month and sorted by .Order,
-- and in cluster mode the Distributed table that spreads a migration's
-- copy of earlier rows by site and hour. A table's file renders it with
-- dialect.Hourly. "hourly drop" is how the migration that makes one of
-- them (.Table, with dialect.Over) starts, so that a step run again after
-- an interruption starts from an empty table: its view (.Table_mv) and
-- its tables dropped.
{{define "hourly key"}}    hour            DateTime('UTC'),
    site            String,
    continent       String,
    country         String,
{{template "design columns" .}}{{end}}
{{define "hourly table"}}    source          Enum8('browser' = 1, 'agent' = 2) ALIAS CAST('browser' AS Enum8('browser' = 1, 'agent' = 2))
)
ENGINE = {{.Engine .Kind .Table}}
PARTITION BY toYYYYMM(hour)
{{- if .Since 56}}
PRIMARY KEY ({{.Order}})
ORDER BY ({{.Order}}, param_extra)
{{- else}}
ORDER BY ({{.Order}})
{{- end}}
SETTINGS index_granularity = {{.Granularity}}, old_parts_lifetime = 10
{{- if .Cluster}};
{{template "schema/distributed.sql" (.Over .Table "cityHash64(site, hour)")}}{{end}}
{{- end}}
{{define "hourly drop"}}DROP TABLE IF EXISTS {{.Name (print .Table "_mv")}}{{.OnCluster}};
{{- if .Cluster}}
DROP TABLE IF EXISTS {{.Name .Table}}{{.OnCluster}};
{{- end}}
DROP TABLE IF EXISTS {{.Local .Table}}{{.OnCluster}}{{end}}
{{- /* The design columns, in the order every hourly key and per-run row
holds them: what a report never pools across (queries.Design); "design"
names them in a SELECT. */ -}}
{{define "design columns"}}    param_parallel  UInt8,
    param_bytes     UInt32,
    param_warmup    UInt8,
    beacon_major    UInt16,
{{- if .Since 56}}
    param_extra     String,
{{- end}}{{end}}
{{define "design"}}param_parallel, param_bytes, param_warmup, beacon_major{{if .Since 56}}, param_extra{{end}}{{end}}
