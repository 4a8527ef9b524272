-- Per-run samples of each group, for the bootstrap and the paired view:
-- one row per run, its samples packed into strings — durations as 4 bytes
-- each (a Float32's little-endian bytes), outcome codes and parallel
-- flags as a byte each, in the same order — which Go reads without
-- clickhouse-go's per-value scanning, far cheaper than a row per sample or
-- arrays through reflection. reinterpretAsString drops a value's trailing
-- zero bytes; concat and substring put them back (toString(FixedString)
-- would drop them again). Outcome codes are the Enum8 values of the
-- outcome column (store.Outcome). A group with more runs than the cap is
-- thinned to the runs whose id's last eight bytes, as a big-endian
-- number, are at most its bound (@groups and @bounds; queries.sampleBound
-- says why that is a uniform sample). Those bytes lead ClickHouse's order
-- of UUIDs, so @bound, the run id of the largest bound, is a range of the
-- primary key (site, hour, run_id): granules above it are not read.
SELECT
    grp,
    arrayStringConcat(arrayMap(x -> substring(concat(reinterpretAsString(x), '\0\0\0\0'), 1, 4), groupArray(duration_ms))) AS d,
    arrayStringConcat(arrayMap(x -> substring(concat(reinterpretAsString(x), '\0'), 1, 1), groupArray(oc))) AS o,
    arrayStringConcat(arrayMap(x -> substring(concat(reinterpretAsString(x), '\0'), 1, 1), groupArray(parallel))) AS p,
    any(h3first) AS h3_first
FROM
(
    SELECT
        {{.Group}} AS grp,
        run_id,
        duration_ms,
        toUInt8(outcome) AS oc,
        toUInt8(phase = 'parallel') AS parallel,
        toUInt8(param_order = 'h3first') AS h3first
    FROM samples
    -- The run sample is taken first, in PREWHERE, so the other columns
    -- are read only for the runs kept.
    PREWHERE run_id <= toUUID(@bound)
         AND {{template "run sample" .}}
    WHERE {{template "selection" .}}
)
GROUP BY grp, run_id
