-- A batch request on a connection its origin's warm-up did not use (the
-- cold rule of store.Exclusions, per request), so cold runs can be counted
-- by protocol. 0 on rows stored before: they are "unchecked" anyway.
ALTER TABLE samples ADD COLUMN cold UInt8 AFTER exclusions
