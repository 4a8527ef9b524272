-- Samples per hour and outcome for the default selection: whole hours from
-- the rollup, the partial edge hours from raw rows (parameters and the
-- raw-edge block as in points_rollup.sql).
SELECT
    h,
    oc,
    countMerge(samples_state) AS n
FROM
(
    SELECT hour AS h, toString(outcome) AS oc, samples AS samples_state
    FROM samples_rollup
    WHERE /*WHOLE HOURS*/
      AND exclusions = 0 AND /*DESIGN*/
    /*RAW EDGES*/
    UNION ALL
    SELECT toStartOfHour(time) AS h, toString(outcome) AS oc, countState() AS samples_state
    FROM samples
    WHERE /*EDGE HOURS*/
      AND phase = 'parallel' AND error = '' AND exclusions = 0 AND /*DESIGN*/
    GROUP BY h, oc
    /*END RAW EDGES*/
)
GROUP BY h, oc
ORDER BY h, oc
