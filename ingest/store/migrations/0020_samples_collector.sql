-- The collector (POP) whose probe served the sample, from the server
-- connection id its Server-Timing carried ("<collector>.<random>-<n>",
-- store.CollectorOf). '' on rows stored before, and for collectors
-- without --collector-id.
ALTER TABLE samples ADD COLUMN collector String AFTER srv_conn_id
