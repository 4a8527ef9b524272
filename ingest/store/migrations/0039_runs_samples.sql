-- The runs table also holds each run's parallel samples, as arrays with
-- one element per request (duration, outcome, origin, error code: '' for
-- a success), and the run's batch order and bot flag. The complete
-- report's bootstrap and paired view then read one row per run instead of
-- 13 samples (queries/sql/runs_table.sql), which makes the per-run fetch
-- cheap. 0041 fills them in for the rows stored before, 0042 for new runs.
ALTER TABLE {{.Local "runs"}}{{.OnCluster}}
    ADD COLUMN param_order Enum8('h2first' = 1, 'h3first' = 2) AFTER beacon_major,
    ADD COLUMN bot UInt8 AFTER param_order,
    ADD COLUMN durations Array(Float32) AFTER cold_h3,
    ADD COLUMN outcomes Array(Enum8('other' = 0, 'h2' = 1, 'h3' = 2, 'wanted_h3_got_h2' = 3)) AFTER durations,
    ADD COLUMN wants Array(Enum8('unknown' = 0, 'h1' = 1, 'h2' = 2, 'h3' = 3)) AFTER outcomes,
    ADD COLUMN errors Array(String) AFTER wants
