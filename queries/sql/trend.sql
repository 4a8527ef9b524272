-- The trend's percentiles: per window × group × outcome × batch order, the
-- runs and a grid of quantiles at .TrendLevels (trend.go reads the
-- report's percentiles and their rank intervals off it), from the same
-- selection as the point estimates. .Window is the trend's hour or day.
SELECT
    toUInt32({{.Window "time"}}) AS t,
    {{.Group}} AS grp,
    toString(outcome) AS oc,
    toString(param_order) AS ord,
    uniqExact(run_id) AS n_runs,
    quantilesTDigest({{.TrendLevels}})(duration_ms) AS q
FROM samples
WHERE {{template "selection" .}}
    AND toString(outcome) IN ('h2', 'h3')
GROUP BY t, grp, oc, ord
ORDER BY t, grp, oc, ord
