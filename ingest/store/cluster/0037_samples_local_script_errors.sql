-- The script's own errors by stage (see migrations/0047_samples_script_errors.sql),
-- on every shard's table; 0039 adds them to the Distributed table.
ALTER TABLE /*DATABASE*/.samples_local ON CLUSTER /*CLUSTER*/
    ADD COLUMN script_errors_idle UInt16 DEFAULT 0 AFTER partial,
    ADD COLUMN script_errors_warmup UInt16 DEFAULT 0 AFTER script_errors_idle,
    ADD COLUMN script_errors_batch UInt16 DEFAULT 0 AFTER script_errors_warmup,
    ADD COLUMN script_errors_timing UInt16 DEFAULT 0 AFTER script_errors_batch,
    ADD COLUMN script_errors_send UInt16 DEFAULT 0 AFTER script_errors_timing
