-- handshake_rollup (schema/handshake_rollup.sql): the table, every hour
-- stored so far digested from samples as its view digests a block, then
-- the view. As 0054: the view and the table are dropped first, so that a
-- step run again after an interruption starts from an empty table;
-- migrations run before ingest starts, so no row arrives between the fill
-- and the view.
{{template "hourly drop" (.Over "handshake_rollup" "")}};
{{template "schema/handshake_rollup.sql" .}};
INSERT INTO {{.Name "handshake_rollup"}} (hour, site, continent, country, {{template "design" .}},
                  got, retried, samples, duration, connect, fastest, resumed, early)
{{template "handshake rollup from" (.Reading (.Name "samples"))}};
{{template "schema/handshake_rollup_mv.sql" .}}
