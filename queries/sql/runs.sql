-- Per-run samples of each group, for the bootstrap and the paired view:
-- one row per sample, a run's samples in a row, i its position (1, 2, …)
-- in its run — rows rather than a run's arrays, which clickhouse-go scans
-- element by element through reflection (twice the CPU at 10 M samples).
-- Outcome codes are the Enum8 values of the outcome column (store.Outcome). A group with
-- more runs than the cap is thinned to a uniform sample of runs by a hash
-- of run_id (threshold per group, out of 1 000 000); the hash reads the
-- UUID's bytes, which 18.16's hash functions do not take directly.
-- Parameters: groups (Array(String)), thresholds (Array(UInt64)), since,
-- until, site twice, include_warmup, include_failed, include_bots, include_excluded, the exclusion bits that count.
SELECT grp, d, o, p, h3_first, i
FROM
(
SELECT
    grp,
    groupArray(duration_ms) AS ds,
    groupArray(oc) AS os,
    groupArray(parallel) AS ps,
    any(h3first) AS h3_first
FROM
(
    SELECT
        /*GROUP*/ AS grp,
        run_id,
        duration_ms,
        toUInt8(outcome) AS oc,
        toUInt8(phase = 'parallel') AS parallel,
        toUInt8(param_order = 'h3first') AS h3first
    FROM samples
    -- The run sample is taken first, in PREWHERE, so the other columns
    -- are read only for the runs kept (a third of the time at 10 M rows).
    PREWHERE intHash64(reinterpretAsUInt64(reinterpretAsString(run_id))) % 1000000
             < transform(/*GROUP*/, CAST(? AS Array(String)), CAST(? AS Array(UInt64)), toUInt64(1000000))
    WHERE /*SELECTION*/
)
GROUP BY grp, run_id
)
ARRAY JOIN ds AS d, os AS o, ps AS p, arrayEnumerate(ds) AS i
