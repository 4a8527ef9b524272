-- Writes 0032's columns into the rows stored before, on every replica
-- (through ZooKeeper); see migrations/0045.
ALTER TABLE /*DATABASE*/.runs_local ON CLUSTER /*CLUSTER*/ UPDATE failed_wants = arrayFilter((w, e) -> e != '', wants, errors), failed_errors = arrayFilter(e -> e != '', errors) WHERE 1
