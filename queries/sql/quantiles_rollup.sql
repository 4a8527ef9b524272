-- A quantile grid from the hourly rollup, for the default selection (as
-- points_rollup.sql): per window × group × outcome × batch order, the
-- levels of /*GRID LEVELS*/ for the H2 and H3 requests, merged from the
-- rollup's t-digests (a state's levels are read at the merge: its own five
-- are not the only ones it answers), the partial hours at the window's
-- edges aggregated from raw rows into the same states. The trend reads it
-- by hour or day (/*WINDOW*/ over w_hour, the hour); it took 0.4–0.7 s at
-- 10 M samples on 18.16 from the runs table, which built a t-digest of
-- every request again, and 50–80 ms from here. (The curves over the whole
-- window come with the point estimates, points_rollup.sql.) The trend's runs are counted exactly
-- with the point estimates (points_runs_counts.sql). Parameters: first whole hour, end of
-- whole hours, site twice, then the two raw edges as four unix seconds and
-- site twice (cut, with the raw-edge block, for a window of whole hours).
SELECT
    toUInt32({{.Window "w_hour"}}) AS t,
    grp,
    oc,
    ord,
    quantilesTDigestMerge({{.GridLevels}})(duration_state) AS q
FROM
(
    SELECT hour AS w_hour, {{.Group}} AS grp, toString(outcome) AS oc, toString(param_order) AS ord,
           duration AS duration_state
    FROM samples_rollup
    WHERE {{template "whole hours" .}}
      AND exclusions = 0 AND (outcome = 'h2' OR outcome = 'h3') AND {{template "design" .}}
    {{- if .Edges}}
    UNION ALL
    SELECT toStartOfHour(time) AS w_hour, {{.Group}} AS grp, toString(outcome) AS oc, toString(param_order) AS ord,
           quantilesTDigestState({{.Levels}})(duration_ms) AS duration_state
    FROM samples
    WHERE {{template "edge hours" .}}
      AND phase = 'parallel' AND error = '' AND exclusions = 0 AND (outcome = 'h2' OR outcome = 'h3') AND {{template "design" .}}
    GROUP BY w_hour, grp, oc, ord
    {{- end}}
)
GROUP BY t, grp, oc, ord
ORDER BY t, grp, oc, ord
