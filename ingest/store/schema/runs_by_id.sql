-- runs again, sorted for sampling: by continent, then day, then run id, in
-- granules of 1 024 rows. A uniform sample of a continent's runs over a
-- window (the bootstrap's, queries' "sample range") is then the start of
-- one key range a day and part, read alone whatever the traffic; in runs,
-- sorted by hour for the reads by time (a rollup report's edges), it is the
-- start of a range an hour, continent and part, a granule each at least.
-- Its own view fills it from samples (a view does not fire on the rows
-- another view writes), exactly once as runs is.
CREATE TABLE IF NOT EXISTS {{.Local "runs_by_id"}}{{.OnCluster}} AS {{.Local "runs"}}
ENGINE = {{.Engine "ReplacingMergeTree" "runs_by_id"}}
PARTITION BY toYYYYMM(time)
ORDER BY (site, continent, toStartOfDay(time), run_id)
SETTINGS index_granularity = 1024, old_parts_lifetime = 10
{{- if .Cluster}};
{{template "schema/distributed.sql" (.Over "runs_by_id" "cityHash64(toString(run_id))")}}{{end}}
