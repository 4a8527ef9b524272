-- The script's own errors in the run, by the stage it was in (the report's
-- x, beacon 1.3.0; PROTOCOL.md): the same in every sample of a run, so that
-- runs a broken script cut short are counted by browser beside the others.
-- A run cut short before its first sample has no row. 0 for scripts
-- before 1.3.0, for runs without errors and for rows stored before.
ALTER TABLE {{.Local "samples"}}{{.OnCluster}}
    ADD COLUMN script_errors_idle UInt16 DEFAULT 0 AFTER partial,
    ADD COLUMN script_errors_warmup UInt16 DEFAULT 0 AFTER script_errors_idle,
    ADD COLUMN script_errors_batch UInt16 DEFAULT 0 AFTER script_errors_warmup,
    ADD COLUMN script_errors_timing UInt16 DEFAULT 0 AFTER script_errors_batch,
    ADD COLUMN script_errors_send UInt16 DEFAULT 0 AFTER script_errors_timing
