-- Hourly rollup of the requests that opened a new connection (reused = 0)
-- for the handshakes section of a report from the rollup
-- (queries/sql/handshakes_rollup.sql): browser rows of every phase (the
-- warm-ups are where new connections are), successful, by the protocol
-- they used and whether their connection paid a QUIC Retry (the server's
-- word, srv_retry), with t-digest states of the wait and of the connection
-- set-up, the fastest wait, and how many resumed TLS or sent 0-RTT. A
-- report reads a few thousand rows a day here where it would scan every
-- sample of its window for reused. Bots' runs are left out, as every
-- report leaves them out of this section.
CREATE TABLE IF NOT EXISTS {{.Local (.Rollup "handshake_rollup")}}{{.OnCluster}}
(
{{template "hourly key" .}}
    got             Enum8('unknown' = 0, 'h1' = 1, 'h2' = 2, 'h3' = 3),
    retried         UInt8,
    samples         AggregateFunction(count),
    duration        AggregateFunction(quantilesTDigest(0.5, 0.75, 0.9, 0.95, 0.99), Float32),
    connect         AggregateFunction(quantilesTDigest(0.5, 0.75, 0.9, 0.95, 0.99), Float32),
    fastest         AggregateFunction(min, Float32),
    resumed         AggregateFunction(sum, UInt8),
    early           AggregateFunction(sum, UInt8),
{{template "hourly table" (.Hourly "AggregatingMergeTree" (.Rollup "handshake_rollup") "site, hour, continent, country, param_parallel, param_bytes, param_warmup, beacon_major, got, retried")}}
