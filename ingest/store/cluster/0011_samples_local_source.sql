-- Who measured the sample (see migrations/0031_samples_source.sql), on
-- every shard's table; 0012 adds it to the Distributed table.
ALTER TABLE /*DATABASE*/.samples_local ON CLUSTER /*CLUSTER*/ ADD COLUMN source Enum8('browser' = 1, 'agent' = 2) DEFAULT 'browser' AFTER site
