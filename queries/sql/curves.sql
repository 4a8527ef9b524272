-- Quantile curves per group × outcome × batch order from raw samples: the
-- distribution view's curves (curves.go), of the same selection as the
-- point estimates. /*CURVE LEVELS*/ is curveLevels, filled in by Go.
-- Parameters: since, until (unix seconds), site twice, include_warmup,
-- include_failed, include_bots, include_excluded (0/1), the exclusion bits
-- that count.
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
