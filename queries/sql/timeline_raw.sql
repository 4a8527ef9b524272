-- Samples per hour and outcome from raw rows.
SELECT
    toStartOfHour(time) AS h,
    toString(outcome) AS oc,
    count() AS n
FROM samples
WHERE {{template "selection" .}}
GROUP BY h, oc
ORDER BY h, oc
