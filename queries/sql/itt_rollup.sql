-- itt_raw.sql from the hourly rollup of every parallel request by the
-- origin it was sent to (want) and whether it failed, a failure's duration
-- at the script's timeout (itt_rollup, store migration 0054:
-- samples_rollup's states under a key without batch order, outcome and
-- exclusions but the bot's, an eighth of its rows): whole hours from it,
-- the edges' five minutes from its twin and the minutes left from the runs
-- table's requests into the same states, as points_rollup.sql. Its run counts are 0: the
-- excluded section counts the runs exactly (excluded_rollup.sql), and
-- merging HyperLogLog states here would cost more than the rest.
SELECT
    grp,
    sent_to,
    toUInt64(0) AS n_runs,
    countMerge(samples_state) AS n_samples,
    countMergeIf(samples_state, f = 1) AS n_failed,
    toUInt64(0) AS n_failed_runs,
    quantilesTDigestMerge({{.Levels}})(duration_state) AS q
FROM
(
    {{- range $i, $r := .Rollups "itt_rollup"}}{{if $i}}
    UNION ALL{{end}}
    SELECT {{.Group}} AS grp, toString(want) AS sent_to, failed AS f,
           samples AS samples_state, duration AS duration_state
    FROM {{.Table}}
    WHERE {{template "rollup slots" .}}
      AND (want = 'h2' OR want = 'h3')
      AND bot = 0 AND {{template "design" .}}
    {{- end}}
    {{- if .Edges}}
    UNION ALL
    SELECT {{.Group}} AS grp, toString(want) AS sent_to, toUInt8(error != '') AS f,
           countState() AS samples_state,
           quantilesTDigestState({{.Levels}})(if(error = '', duration_ms, toFloat32({{.TimeoutMS}}))) AS duration_state
    FROM runs
    {{template "edge requests"}}
    PREWHERE {{template "edge hours" .}}
      AND bitAnd(exclusions, {{.BotBit}}) = 0 AND {{template "design columns" .}}{{template "place filters" .}}
    WHERE (want = 'h2' OR want = 'h3') AND source = @source
    GROUP BY grp, sent_to, f
    {{- end}}
)
GROUP BY grp, sent_to
ORDER BY grp, sent_to
