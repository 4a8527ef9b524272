-- Who measured the sample: a visitor's browser running the beacon, or
-- `h3rum agent` reporting over the WebSocket ingest with the agent token.
-- Reports never pool the two (queries filter on it; the rollup and runs
-- views keep browser rows only, 0034 and 0037). Rows stored before are
-- browser rows.
ALTER TABLE {{.Local "samples"}}{{.OnCluster}} ADD COLUMN source Enum8('browser' = 1, 'agent' = 2) DEFAULT 'browser' AFTER site
