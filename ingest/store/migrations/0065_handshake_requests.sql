-- handshake_requests (schema/handshake_requests.sql): the table, every
-- request on a new connection stored so far copied from samples as its
-- view copies a block, then the view. As 0063: the view and the table are
-- dropped first, so that a step run again after an interruption starts
-- from an empty table; migrations run before ingest starts, so no row
-- arrives between the fill and the view.
{{template "hourly drop" (.Over "handshake_requests" "")}};
{{template "schema/handshake_requests.sql" .}};
INSERT INTO {{.Name "handshake_requests"}} (time, site, continent, country, {{template "design" .}},
                  got, retried, duration_ms, connect_ms, resumed, early)
{{template "handshake requests from" (.Reading (.Name "samples"))}};
{{template "schema/handshake_requests_mv.sql" .}}
