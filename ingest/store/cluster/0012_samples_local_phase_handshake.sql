-- The agent's handshake phase (see migrations/0032_samples_phase_handshake.sql).
ALTER TABLE /*DATABASE*/.samples_local ON CLUSTER /*CLUSTER*/ MODIFY COLUMN phase Enum8('warmup' = 1, 'parallel' = 2, 'handshake' = 3)
