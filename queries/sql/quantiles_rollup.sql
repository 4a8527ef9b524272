-- A quantile grid from the hourly rollup, for the default selection (as
-- points_rollup.sql): per window × group × outcome × batch order, the
-- levels of .GridLevels for the H2 and H3 requests, merged from the
-- rollup's t-digests (a state's levels are read at the merge: its own five
-- are not the only ones it answers), and the edges' five minutes from its
-- twin and their minutes left (the .Edges block) from the runs table's
-- requests ("edge requests") into the same states, as points_rollup.sql. The trend reads it by hour or day (.Window over w_hour, the
-- hour): far cheaper than building a t-digest of every request again
-- from the runs table. The curves over the whole window come with the
-- point estimates (points_rollup.sql), and the trend's runs are counted
-- exactly with them (points_runs_counts.sql).
SELECT
    toUInt32({{.Window "w_hour"}}) AS t,
    grp,
    oc,
    ord,
    quantilesTDigestMerge({{.GridLevels}})(duration_state) AS q
FROM
(
    {{- range $i, $r := .Rollups "samples_rollup"}}{{if $i}}
    UNION ALL{{end}}
    SELECT hour AS w_hour, {{.Group}} AS grp, toString(outcome) AS oc, toString(param_order) AS ord,
           duration AS duration_state
    FROM {{.Table}}
    WHERE {{template "rollup slots" .}}
      AND exclusions = 0 AND (outcome = 'h2' OR outcome = 'h3') AND {{template "design" .}}
    {{- end}}
    {{- if .Edges}}
    UNION ALL
    SELECT toStartOfHour(time) AS w_hour, {{.Group}} AS grp, toString(outcome) AS oc, toString(param_order) AS ord,
           quantilesTDigestState({{.Levels}})(duration_ms) AS duration_state
    FROM runs
    {{template "edge requests"}}
    PREWHERE {{template "edge hours" .}}
      AND exclusions = 0 AND {{template "design columns" .}}{{template "place filters" .}}
    WHERE error = '' AND (outcome = 'h2' OR outcome = 'h3') AND source = @source
    GROUP BY w_hour, grp, oc, ord
    {{- end}}
)
GROUP BY t, grp, oc, ord
ORDER BY t, grp, oc, ord
