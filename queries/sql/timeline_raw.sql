-- Samples per hour and outcome from raw rows.
-- Parameters: since, until, site twice, include_warmup, include_failed,
-- include_bots, include_excluded, the exclusion bits that count.
SELECT
    toStartOfHour(time) AS h,
    toString(outcome) AS oc,
    count() AS n
FROM samples
WHERE {{template "selection" .}}
GROUP BY h, oc
ORDER BY h, oc
