-- The age of the server connection a request arrived on (Server-Timing's
-- age, ms since the collector accepted it): a warm batch request rides a
-- connection opened well before it. -1 where no age was reported (scripts
-- and collectors before beacon 1.1, rows stored before).
ALTER TABLE samples ADD COLUMN srv_conn_age_ms Float32 DEFAULT -1 AFTER srv_conn_reqs
