-- The beacon's view of the same requests, beside NEL's elapsed times: every
-- successful probe request (warm-ups included, as NEL sees them) of every
-- site, by the protocol it used. Parameters: since, until (unix seconds),
-- include bots (0/1).
SELECT
    toString(got) AS proto,
    count() AS n_samples,
    quantilesTDigest(/*LEVELS*/)(duration_ms) AS q
FROM samples
WHERE time >= toDateTime(?, 'UTC') AND time < toDateTime(?, 'UTC')
  AND error = '' AND (got = 'h2' OR got = 'h3')
  AND (? = 1 OR bot = 0)
  AND /*PLACE*/
GROUP BY proto
ORDER BY proto
