-- The runs' batch order, bot flag and parallel samples; see
-- migrations/0039.
ALTER TABLE /*DATABASE*/.runs_local ON CLUSTER /*CLUSTER*/
    ADD COLUMN param_order Enum8('h2first' = 1, 'h3first' = 2) AFTER beacon_major,
    ADD COLUMN bot UInt8 AFTER param_order,
    ADD COLUMN durations Array(Float32) AFTER cold_h3,
    ADD COLUMN outcomes Array(Enum8('other' = 0, 'h2' = 1, 'h3' = 2, 'wanted_h3_got_h2' = 3)) AFTER durations,
    ADD COLUMN wants Array(Enum8('unknown' = 0, 'h1' = 1, 'h2' = 2, 'h3' = 3)) AFTER outcomes,
    ADD COLUMN errors Array(String) AFTER wants
