-- Quantile curves per group × outcome × batch order from raw samples: the
-- distribution view's curves (curves.go) at the curve levels, of the same
-- selection as the point estimates.
SELECT
    {{.Group}} AS grp,
    toString(outcome) AS oc,
    toString(param_order) AS ord,
    quantilesTDigest({{.CurveLevels}})(duration_ms) AS q
FROM samples
WHERE {{template "selection" .}}
    AND toString(outcome) IN ('h2', 'h3')
GROUP BY grp, oc, ord
ORDER BY grp, oc, ord
