-- handshakes.sql for reports from the rollup: the same figures by group
-- and protocol, the window's whole hours from handshake_rollup, the
-- edges' five minutes from its twin and the minutes left from
-- handshake_requests (the same requests one by one, sorted by time: a
-- range of those minutes each), merged into the same states. A browser report's requests have no kind (''); the
-- requests whose connection paid a QUIC Retry are counted apart
-- (retried), as in handshakes.sql. The edges' states keep .Levels, the
-- rollup columns' type.
SELECT
    grp,
    proto,
    '' AS kind,
    countMergeIf(samples_state, r = 0) AS n_samples,
    quantilesTDigestMergeIf({{.Levels}})(duration_state, r = 0) AS q,
    quantilesTDigestMergeIf({{.Levels}})(connect_state, r = 0) AS qc,
    minMergeIf(fastest_state, r = 0) AS fastest,
    if(n_samples = 0, 0, sumMergeIf(resumed_state, r = 0) / n_samples) AS resumed,
    if(n_samples = 0, 0, sumMergeIf(early_state, r = 0) / n_samples) AS early,
    countMergeIf(samples_state, r = 1) AS retried
FROM
(
    {{- range $i, $r := .Rollups "handshake_rollup"}}{{if $i}}
    UNION ALL{{end}}
    SELECT {{.Group}} AS grp, toString(got) AS proto, retried AS r,
           samples AS samples_state, duration AS duration_state, connect AS connect_state,
           fastest AS fastest_state, resumed AS resumed_state, early AS early_state
    FROM {{.Table}}
    WHERE {{template "rollup slots" .}}
      AND {{template "design" .}}
    {{- end}}
    {{- if .Edges}}
    UNION ALL
    SELECT {{.Group}} AS grp, toString(got) AS proto, retried AS r,
           countState() AS samples_state,
           quantilesTDigestState({{.Levels}})(duration_ms) AS duration_state,
           quantilesTDigestState({{.Levels}})(connect_ms) AS connect_state,
           minState(duration_ms) AS fastest_state,
           sumState(resumed) AS resumed_state, sumState(early) AS early_state
    FROM handshake_requests
    PREWHERE {{template "edge hours" .}}
    WHERE {{template "design" .}}
    GROUP BY grp, proto, r
    {{- end}}
)
GROUP BY grp, proto
ORDER BY grp, proto
