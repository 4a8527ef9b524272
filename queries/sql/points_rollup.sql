-- Point estimates per group × outcome × batch order from the hourly rollup,
-- for the default selection: the like-for-like headline (parallel,
-- successful requests of runs without exclusions) of one design. Whole
-- hours inside the window come from samples_rollup, the whole five minutes
-- of the partial hours at its edges from its five-minute twin (.Rollups,
-- store migration 0066); the .Edges block aggregates the minutes left,
-- under five at either end, from the runs table's requests ("edge
-- requests") into the same states, so the window is exact. A window
-- without such minutes has no such block (an empty raw branch still costs
-- a scan). WITH ROLLUP adds the totals of every group × outcome (order
-- ''), of every group (outcome '') and a grand total (group '').
-- Run counts are the rollup's HyperLogLog states for Grafana's panels;
-- with .ExactRuns, zeros for the report, which counts runs exactly from
-- the runs table (points_runs_counts.sql) rather than merge the states,
-- the costliest part of this query. .MergeLevels are the levels read off
-- the merged t-digests: in the report, the distribution's curve levels
-- (which hold every reported percentile), so that its curves come from
-- this pass and not from a second merge of the same states; in Grafana's
-- panels, the percentiles. The raw edges' states keep .Levels, the rollup
-- column's type. With .Trend the rows are grouped by the trend's window
-- (t, hour or day) too, last, so that the rows of one window are the
-- trend's quantile grid and those of t 0 (WITH ROLLUP's) the rows above.
SELECT
    grp,
    oc,
    ord,
    {{if .ExactRuns}}toUInt64(0){{else}}uniqHLL12Merge(runs_state){{end}} AS n_runs,
    countMerge(samples_state) AS n_samples,
    quantilesTDigestMerge({{.MergeLevels}})(duration_state) AS q
    {{- if .Trend}},
    toUInt32({{.Window "w_hour"}}) AS t
    {{- end}}
FROM
(
    {{- range $i, $r := .Rollups "samples_rollup"}}{{if $i}}
    UNION ALL{{end}}
    SELECT {{if .Trend}}hour AS w_hour, {{end}}{{.Group}} AS grp, toString(outcome) AS oc, toString(param_order) AS ord,
           {{if .ExactRuns}}toUInt8(0){{else}}runs{{end}} AS runs_state, samples AS samples_state, duration AS duration_state
    FROM {{.Table}}
    WHERE {{template "rollup slots" .}}
      AND exclusions = 0 AND {{template "design" .}}
    {{- end}}
    {{- if .Edges}}
    UNION ALL
    SELECT {{if .Trend}}toStartOfHour(time) AS w_hour, {{end}}{{.Group}} AS grp, toString(outcome) AS oc, toString(param_order) AS ord,
           {{if .ExactRuns}}toUInt8(0){{else}}uniqHLL12State(run_id){{end}} AS runs_state, countState() AS samples_state,
           quantilesTDigestState({{.Levels}})(duration_ms) AS duration_state
    FROM runs
    {{template "edge requests"}}
    PREWHERE {{template "edge hours" .}}
      AND exclusions = 0 AND {{template "design columns" .}}{{template "place filters" .}}
    WHERE error = '' AND source = @source
    GROUP BY {{if .Trend}}w_hour, {{end}}grp, oc, ord
    {{- end}}
)
GROUP BY grp, oc, ord{{if .Trend}}, t{{end}} WITH ROLLUP
ORDER BY grp, oc, ord{{if .Trend}}, t{{end}}
