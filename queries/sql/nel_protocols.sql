-- NEL by protocol: successful and failed requests estimated from the
-- reports (each weighted by 1 / sampling fraction), and the elapsed time
-- browsers reported for successful /probe requests — present only where
-- success sampling is on. Binds @min_sampling_fraction, as
-- nel_failures.sql.
SELECT
    toString(protocol) AS proto,
    countIf(type = 'ok') AS ok_reports,
    sumIf(1 / sampling_fraction, type = 'ok') AS ok_estimated,
    sumIf(1 / sampling_fraction, type != 'ok') AS failed_estimated,
    countIf(type = 'ok' AND probe = 1) AS probe_ok,
    quantilesTDigestIf({{.Levels}})(elapsed_ms, type = 'ok' AND probe = 1) AS q
FROM nel_reports
WHERE time >= toDateTime(@since, 'UTC') AND time < toDateTime(@until, 'UTC')
  AND (@include_bots = 1 OR bot = 0)
  AND sampling_fraction >= @min_sampling_fraction AND sampling_fraction <= 1
  AND {{template "place" .}}
GROUP BY proto
ORDER BY proto
