-- Retention on one server: an expired month partition of a table that
-- retention_partitions.sql lists (its name, one of that file's fixed
-- names, is filled in by h3rum). Parameter: the month (YYYYMM).
ALTER TABLE /*TABLE*/ DROP PARTITION ?
