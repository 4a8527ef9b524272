-- Handshakes: requests that opened a new connection (the browser saw a
-- connection set-up: reused = 0), by the protocol they used — the time a
-- visitor waits for a first byte on a fresh connection, and how often TLS
-- resumed and QUIC sent 0-RTT. Warm-ups included (that is where new
-- connections are); non-bot runs of the design, successful requests.
-- An agent report reads the agent's handshake samples instead, each a
-- request on a new connection of a known kind (the server's word: a full
-- handshake, a resumed session, or 0-RTT early data); browser rows have no
-- kind. fastest is the quickest such request: the floor the path and the
-- protocol's round trips set, which noise (queueing, a busy CPU) only adds
-- to. A request whose connection paid a QUIC Retry's round trip (the
-- server's word, srv_retry) is counted apart and left out of the figures:
-- its wait holds a round trip the path and the protocol do not cost. With
-- every request retried, the shares are 0: a share of nothing.
SELECT
    {{.Group}} AS grp,
    toString(got) AS proto,
    if(phase = 'handshake', multiIf(srv_early = 1, '0rtt', srv_resumed = 1, 'resumed', 'full'), '') AS kind,
    countIf(srv_retry = 0) AS n_samples,
    quantilesTDigestIf({{.Levels}})(duration_ms, srv_retry = 0) AS q,
    quantilesTDigestIf({{.Levels}})(connect_ms, srv_retry = 0) AS qc,
    minIf(duration_ms, srv_retry = 0) AS fastest,
    if(n_samples = 0, 0, avgIf(srv_resumed, srv_retry = 0)) AS resumed,
    if(n_samples = 0, 0, avgIf(srv_early, srv_retry = 0)) AS early,
    countIf(srv_retry = 1) AS retried
FROM samples
WHERE time >= toDateTime(@since, 'UTC') AND time < toDateTime(@until, 'UTC')
  AND (@site = '' OR site = @site)
  AND reused = 0 AND error = '' AND (got = 'h2' OR got = 'h3')
  AND bitAnd(exclusions, {{.BotBit}}) = 0
  AND (source = 'browser' OR phase = 'handshake')
  AND {{template "design" .}}
GROUP BY grp, proto, kind
ORDER BY grp, proto, kind
