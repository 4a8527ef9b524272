-- The script's major version, one of the design fields reports never pool
-- across (with param_parallel, param_bytes and param_warmup).
ALTER TABLE samples
    ADD COLUMN beacon_major UInt16 DEFAULT toUInt16OrZero(splitByChar('.', beacon_version)[1])
    AFTER beacon_version
