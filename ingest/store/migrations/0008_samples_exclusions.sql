-- Why a run is left out of the like-for-like headline (store.Exclusions,
-- a bit set computed once at ingest from the whole run). Rows stored
-- before carry "unchecked" (128): most checks need the whole run. The bits
-- a row shows by itself are kept: bot (64), partial (16), short warm-up (8).
ALTER TABLE samples
    ADD COLUMN exclusions UInt8 DEFAULT toUInt8(128 + 64 * bot + 16 * partial + 8 * (param_warmup < 2))
    AFTER outcome
