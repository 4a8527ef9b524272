-- Each run's failed parallel requests apart, their origin and error code:
-- empty arrays for most runs, so the failures section and the
-- intention-to-treat view's failed runs read them instead of every run's
-- error codes (queries/sql/failures_table.sql, itt_rollup_runs.sql). The
-- defaults are what 0046's view writes; rows stored before read them
-- computed from wants and errors until 0045 writes them.
ALTER TABLE {{.Local "runs"}}{{.OnCluster}}
    ADD COLUMN failed_wants Array(Enum8('unknown' = 0, 'h1' = 1, 'h2' = 2, 'h3' = 3)) DEFAULT arrayFilter((w, e) -> e != '', wants, errors) AFTER errors,
    ADD COLUMN failed_errors Array(String) DEFAULT arrayFilter(e -> e != '', errors) AFTER failed_wants
