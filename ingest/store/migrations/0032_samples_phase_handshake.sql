-- A third phase: the agent's handshake samples, each a request on a new
-- connection (full handshake, resumed session, 0-RTT), kept apart from
-- the warm-ups and the parallel batches. Adding an Enum8 value changes
-- metadata only.
ALTER TABLE {{.Local "samples"}}{{.OnCluster}} MODIFY COLUMN phase Enum8('warmup' = 1, 'parallel' = 2, 'handshake' = 3)
