-- Samples per hour and outcome for the default selection: whole hours from
-- the rollup, the edges' five minutes from its twin and the minutes left
-- from the runs table's requests (the .Edges block), as in
-- points_rollup.sql.
SELECT
    h,
    oc,
    countMerge(samples_state) AS n
FROM
(
    {{- range $i, $r := .Rollups "samples_rollup"}}{{if $i}}
    UNION ALL{{end}}
    SELECT toStartOfHour(hour) AS h, toString(outcome) AS oc, samples AS samples_state
    FROM {{.Table}}
    WHERE {{template "rollup slots" .}}
      AND exclusions = 0 AND {{template "design" .}}
    {{- end}}
    {{- if .Edges}}
    UNION ALL
    SELECT toStartOfHour(time) AS h, toString(outcome) AS oc, countState() AS samples_state
    FROM runs
    {{template "edge requests"}}
    PREWHERE {{template "edge hours" .}}
      AND exclusions = 0 AND {{template "design columns" .}}{{template "place filters" .}}
    WHERE error = '' AND source = @source
    GROUP BY h, oc
    {{- end}}
)
GROUP BY h, oc
ORDER BY h, oc
