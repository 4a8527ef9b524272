-- The design parameters a report carries beyond parallel, bytes and
-- warm-up (beacon.Params.Extra: "name=value,…" in the embedding's order,
-- defaults left out), the same in every sample of a run: '' for the rows
-- stored before and for every script that reports none. A step of its own,
-- as 0049: 0056 keys the per-run and hourly tables by it, and 0056 makes
-- the Distributed table again in cluster mode.
ALTER TABLE {{.Local "samples"}}{{.OnCluster}} ADD COLUMN param_extra String AFTER param_bytes
