-- The beacon's view of the same requests, beside NEL's elapsed times: every
-- successful probe request (warm-ups included, as NEL sees them) of every
-- site, by the protocol it used.
SELECT
    toString(got) AS proto,
    count() AS n_samples,
    quantilesTDigest({{.Levels}})(duration_ms) AS q
FROM samples
WHERE time >= toDateTime(@since, 'UTC') AND time < toDateTime(@until, 'UTC')
  AND error = '' AND (got = 'h2' OR got = 'h3')
  AND (@include_bots = 1 OR bot = 0)
  AND {{template "place" .}}
GROUP BY proto
ORDER BY proto
