-- The trend's HTTP/3 availability per window × group from the runs table,
-- as excluded.sql counts it for the whole window: of the design's runs
-- with an H3 batch (bots' only with include_bots), those whose every batch
-- request to the H3 origin was served over h3. /*BUCKET*/ as in trend.sql.
-- Parameters: include_bots twice, since, until (unix seconds), site twice.
SELECT
    toUInt32(/*BUCKET*/) AS t,
    /*GROUP*/ AS grp,
    countIf(h3n > 0 AND (bitAnd(exclusions, /*BOT BIT*/) = 0 OR ? = 1)) AS with_h3,
    countIf(h3n > 0 AND h3ok = h3n AND (bitAnd(exclusions, /*BOT BIT*/) = 0 OR ? = 1)) AS available
FROM runs
WHERE time >= toDateTime(?, 'UTC') AND time < toDateTime(?, 'UTC')
  AND (? = '' OR site = ?)
  AND /*DESIGN*/
GROUP BY t, grp
ORDER BY t, grp
